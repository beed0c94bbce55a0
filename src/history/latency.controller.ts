import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiAuthErrors, ApiErrors } from '../common/error.dto.js';
import { CurrentKey } from '../auth/api-key.guard.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { LatencyHistoryDto, LatencyQueryDto } from './dto/latency.dto.js';
import { LatencyService } from './latency.service.js';

@ApiTags('history')
@ApiBearerAuth()
@ApiAuthErrors()
@Controller('v1/history')
export class LatencyController {
  constructor(private readonly latency: LatencyService) {}

  /** Attempts of the calling key per time bucket: count, ok, failed and p50/p90/p99/max duration (ms). */
  @Get('latency')
  @ApiOperation({ summary: 'Get latency history per time bucket' })
  @ApiOkResponse({ type: LatencyHistoryDto })
  @ApiErrors(404)
  get(@CurrentKey() key: AuthenticatedKey, @Query() q: LatencyQueryDto): Promise<LatencyHistoryDto> {
    return this.latency.latencyHistory(key.id, q);
  }
}
