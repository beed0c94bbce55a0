import { Controller, Get, Header, Headers, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Public } from '../auth/api-key.guard.js';
import { bearerToken, sameSecret } from '../auth/bearer.js';
import { AppError } from '../common/app.error.js';
import { ApiCommonErrors, ApiErrors } from '../common/error.dto.js';
import { AppConfig } from '../config/app.config.js';
import { MetricsCollector } from './metrics.collector.js';
import { MetricsService } from './metrics.service.js';

/** The security scheme of GET /metrics in the API document: no API key, but METRICS_TOKEN as a bearer token when one is set. */
export const METRICS_TOKEN = 'metricsToken';

@ApiTags('health')
@Public()
@ApiCommonErrors()
@Controller('metrics')
export class MetricsController {
  constructor(
    private readonly metrics: MetricsService,
    private readonly collector: MetricsCollector,
    private readonly config: AppConfig,
  ) {}

  /** Prometheus text exposition: attempts by outcome, latency histograms, backlog, window, claim and write-back timings, per-host state. */
  @Get()
  @ApiOperation({ summary: 'Prometheus metrics', security: [{}, { [METRICS_TOKEN]: [] }] })
  @Header('cache-control', 'no-store')
  @ApiProduces('text/plain')
  @ApiOkResponse({ description: 'Prometheus text format 0.0.4', content: { 'text/plain': { schema: { type: 'string' } } } })
  @ApiErrors(401)
  async get(@Headers('authorization') authorization: string | undefined, @Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    this.checkToken(authorization);
    await this.collector.collect();
    void reply.header('content-type', this.metrics.contentType);
    return this.metrics.render();
  }

  /**
   * The metrics name every tenant's destination hosts, so outside a trusted network
   * set METRICS_TOKEN: scrapers then send it as a bearer token (compared in constant time).
   */
  private checkToken(authorization: string | undefined): void {
    const token = this.config.metricsToken;
    if (!token) return;
    if (!sameSecret(bearerToken(authorization) ?? '', token)) throw new AppError('unauthorized', 'metrics need Authorization: Bearer <METRICS_TOKEN>');
  }
}
