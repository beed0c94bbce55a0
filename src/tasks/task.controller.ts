import { Controller, Get, Param } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../auth/api-key.guard.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { notFound } from '../common/app.error.js';
import { ApiAuthErrors, ApiErrors } from '../common/error.dto.js';
import { UuidParam } from '../common/params.js';
import { TaskDto } from './dto/task.dto.js';
import { TaskRepository } from './task.repository.js';
import { toTaskView } from './task.view.js';

@ApiTags('tasks')
@ApiBearerAuth()
@ApiAuthErrors()
@Controller('v1/tasks')
export class TaskController {
  constructor(private readonly tasks: TaskRepository) {}

  /** Where a task stands: running (with the callbacks done so far), finished, or superseded. */
  @Get(':id')
  @ApiOperation({ summary: "Get a task's progress" })
  @ApiOkResponse({ type: TaskDto })
  @ApiErrors(404)
  async get(@CurrentKey() key: AuthenticatedKey, @Param('id', UuidParam) id: string): Promise<TaskDto> {
    const row = await this.tasks.findTask(key.id, id);
    if (!row) throw notFound('task');
    return toTaskView(row);
  }
}
