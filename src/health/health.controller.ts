import { Controller, Get, HttpCode } from '@nestjs/common';
import { ApiOkResponse, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { Public } from '../auth/api-key.guard.js';
import { AppError } from '../common/app.error.js';
import { HealthService } from './health.service.js';

@ApiTags('health')
@Public()
@Controller('health')
export class HealthController {
  constructor(private readonly health: HealthService) {}

  /** The process is up. */
  @Get('live')
  @HttpCode(200)
  live() {
    return { status: 'ok' };
  }

  /** Database reachable, migrations applied, worker loop alive: 200, else 503 with the failing checks. */
  @Get('ready')
  @ApiOkResponse({ description: '`{status: "ok", checks: {database, migrations, worker?}}`, each `{ok: true}`' })
  @ApiServiceUnavailableResponse({ description: 'code `not_ready`; `details` holds every check, the failing ones with `ok: false` and a `detail`' })
  async ready() {
    const checks = await this.health.checks();
    if (Object.values(checks).some((c) => !c.ok)) throw new AppError('not_ready', 'not ready', checks);
    return { status: 'ok', checks };
  }
}
