import { Controller, Get, Header, Res } from '@nestjs/common';
import { ApiOkResponse, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Public } from '../auth/api-key.guard.js';
import { MetricsCollector } from './metrics.collector.js';
import { MetricsService } from './metrics.service.js';

@ApiTags('health')
@Public()
@Controller('metrics')
export class MetricsController {
  constructor(
    private readonly metrics: MetricsService,
    private readonly collector: MetricsCollector,
  ) {}

  /** Prometheus text exposition: attempts by outcome, latency histograms, backlog, window, claim and write-back timings, per-host state. */
  @Get()
  @Header('cache-control', 'no-store')
  @ApiProduces('text/plain')
  @ApiOkResponse({ description: 'Prometheus text format 0.0.4', schema: { type: 'string' } })
  async get(@Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    await this.collector.collect();
    void reply.header('content-type', this.metrics.contentType);
    return this.metrics.render();
  }
}
