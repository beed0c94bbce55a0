import { Controller, Get, Header, Headers, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Public } from '../auth/api-key.guard.js';
import { bearerToken, sameSecret } from '../auth/bearer.js';
import { AppError } from '../common/app.error.js';
import { ApiCommonErrors, ApiErrors } from '../common/error.dto.js';
import { isLoopbackHost } from '../common/service-url.js';
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
  @ApiErrors(401, 403)
  async get(@Headers('authorization') authorization: string | undefined, @Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    this.checkToken(authorization);
    await this.collector.collect();
    void reply.header('content-type', this.metrics.contentType);
    return this.metrics.render();
  }

  /**
   * The metrics name keys and every tenant's destination hosts. With METRICS_TOKEN set,
   * scrapers send it as a bearer token (compared in constant time; 401 otherwise).
   * Without it they are open only while no other machine can reach the port
   * (metricsOpenWithoutToken); else every scrape is a 403 that says what to set.
   */
  private checkToken(authorization: string | undefined): void {
    const token = this.config.metricsToken;
    if (!token) {
      if (metricsOpenWithoutToken(this.config)) return;
      throw new AppError('forbidden', metricsClosedMessage(this.config));
    }
    if (!sameSecret(bearerToken(authorization) ?? '', token)) throw new AppError('unauthorized', 'metrics need Authorization: Bearer <METRICS_TOKEN>');
  }
}

/**
 * True when /metrics may answer without a token: HOST binds loopback only and no
 * TRUSTED_PROXIES are set (a proxy in front forwards other machines' requests, so a
 * loopback bind no longer means only this machine asks).
 */
export function metricsOpenWithoutToken(config: AppConfig): boolean {
  return isLoopbackHost(config.host) && config.trustedProxies.length === 0;
}

/** Why /metrics answers 403 under `config`, and what to set: the scrape's answer and the start's warning. */
export function metricsClosedMessage(config: AppConfig): string {
  const why = isLoopbackHost(config.host)
    ? "TRUSTED_PROXIES is set (a proxy forwards other machines' requests)"
    : `HOST=${config.host} is reachable beyond this machine`;
  return `/metrics needs METRICS_TOKEN: ${why}; set METRICS_TOKEN and scrape with Authorization: Bearer <METRICS_TOKEN>`;
}
