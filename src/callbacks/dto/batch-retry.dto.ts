import { ApiProperty } from '@nestjs/swagger';
import { TaskDto } from '../../tasks/dto/task.dto.js';

/** What `POST /v1/batches/{id}/retry` answers. */
export class BatchRetryDto {
  @ApiProperty({ format: 'uuid' }) batchId: string;
  @ApiProperty({ description: 'callbacks sent again before this answer' }) retried: number;
  @ApiProperty({
    type: TaskDto,
    nullable: true,
    description: 'the task sending the rest again, when there were more than this answer could wait for; null when all are done',
  })
  task: TaskDto | null;
}
