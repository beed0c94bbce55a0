import type { LoggerService } from '@nestjs/common';
import type { FastifyInstance } from 'fastify';
import { requestContext } from './request.context.js';

/** Probes and scrapes are logged at debug only: they come every few seconds. */
const QUIET = /^\/(health|metrics)(\/|\?|$)/;

/**
 * Runs each request inside its request context (so every log line written while
 * serving it carries its `requestId`) and writes one access line per request when
 * the response is sent: method, url, status, duration.
 */
export function registerRequestLogging(fastify: FastifyInstance, logger: LoggerService): void {
  fastify.addHook('onRequest', (req, _reply, done) => requestContext.run({ requestId: String(req.id) }, done));
  fastify.addHook('onResponse', (req, reply, done) => {
    const line = {
      msg: 'request',
      requestId: String(req.id),
      method: req.method,
      url: req.url,
      statusCode: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
    };
    if (QUIET.test(req.url)) logger.debug?.(line, 'Http');
    else logger.log(line, 'Http');
    done();
  });
}
