import { Controller, Get, HttpCode } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Public } from '../auth/api-key.guard.js';
import { AppError } from '../common/app.error.js';
import { ApiCommonErrors, ApiErrors } from '../common/error.dto.js';
import { CheckDto, LiveDto, ReadyDto } from './dto/health.dto.js';
import { HealthService } from './health.service.js';

@ApiTags('health')
@Public()
@ApiCommonErrors()
@Controller('health')
export class HealthController {
  constructor(private readonly health: HealthService) {}

  /** The process is up. */
  @Get('live')
  @ApiOperation({ summary: 'Liveness', security: [] })
  @HttpCode(200)
  @ApiOkResponse({ type: LiveDto })
  live(): LiveDto {
    return { status: 'ok' };
  }

  /** Database reachable, migrations applied, worker loop alive: 200, else 503 with the failing checks. A read replica's state is told, never failed on. */
  @Get('ready')
  @ApiOperation({ summary: 'Readiness', security: [] })
  @ApiExtraModels(CheckDto)
  @ApiOkResponse({ type: ReadyDto, description: 'every check `{ok: true}`' })
  @ApiErrors(503)
  async ready(): Promise<ReadyDto> {
    const checks = await this.health.checks();
    if (Object.values(checks).some((c) => !c.ok)) throw new AppError('not_ready', 'not ready', checks);
    const replica = this.health.replica();
    return { status: 'ok', checks, ...(replica && { replica }) };
  }
}
