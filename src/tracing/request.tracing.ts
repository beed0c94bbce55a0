import { ROOT_CONTEXT, SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { formatTraceparent, tracing } from './tracing.setup.js';

const spans = new WeakMap<FastifyRequest, Span>();
const propagator = new W3CTraceContextPropagator();
const getter = {
  get: (headers: FastifyRequest['headers'], key: string) => headers[key],
  keys: (headers: FastifyRequest['headers']) => Object.keys(headers),
};

/**
 * A server span per API request (HTTP server conventions: `http.request.method`,
 * `http.route`, `url.path`, `http.response.status_code`, `error.type` for 5xx),
 * continuing the caller's `traceparent`/`tracestate` when it sent one. Registered
 * only while tracing is on.
 */
export function registerRequestTracing(fastify: FastifyInstance): void {
  if (!tracing.tracer) return;
  fastify.addHook('onRequest', (req, _reply, done) => {
    const tracer = tracing.tracer;
    if (tracer) {
      const parent = propagator.extract(ROOT_CONTEXT, req.headers, getter);
      const route = req.routeOptions?.url;
      const path = req.url.split('?')[0];
      spans.set(
        req,
        tracer.startSpan(
          route ? `${req.method} ${route}` : req.method,
          {
            kind: SpanKind.SERVER,
            attributes: {
              'http.request.method': req.method,
              'url.path': path,
              'url.scheme': req.protocol,
              ...(route && { 'http.route': route }),
              ...(req.headers['user-agent'] && { 'user_agent.original': req.headers['user-agent'] }),
              'client.address': req.ip,
            },
          },
          parent,
        ),
      );
    }
    done();
  });
  fastify.addHook('onResponse', (req, reply, done) => {
    const span = spans.get(req);
    if (span) {
      span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) {
        span.setAttribute('error.type', String(reply.statusCode));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
      spans.delete(req);
    }
    done();
  });
}

/** The traceparent of the request's server span, to store with what it accepts; null while tracing is off. */
export function traceparentOf(req: FastifyRequest): string | null {
  const span = spans.get(req);
  return span ? formatTraceparent(span.spanContext()) : null;
}
