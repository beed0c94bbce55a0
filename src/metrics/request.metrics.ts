import type { FastifyInstance } from 'fastify';
import type { MetricsService } from './metrics.service.js';

/** Times every API request by its route pattern (`/v1/batches/:id`), so the label set stays small; unknown routes count as `unmatched`. */
export function registerRequestMetrics(fastify: FastifyInstance, metrics: MetricsService): void {
  fastify.addHook('onResponse', (req, reply, done) => {
    metrics.httpRequest(req.method, req.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}
