import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppConfig } from '../config/app.config.js';
import { jsonDepth } from './validators.js';

/** Levels a request may nest around its callback bodies (`{callbacks:[{body:…}]}` and slack). */
export const ENVELOPE_DEPTH = 4;

/**
 * Headers on every response unless a route set its own: no MIME sniffing, no
 * framing by other sites, no referrer leaks, nothing cached, and a CSP that lets
 * pages load only from this origin. CORS stays off: no Access-Control-* header is
 * ever sent, so browsers on other origins cannot read API responses.
 */
const SECURITY_HEADERS: Record<string, string> = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
  'content-security-policy': "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'cache-control': 'no-store',
};

const SECURITY_HEADER_LIST = Object.entries(SECURITY_HEADERS);
const FRAMEABLE = /frame-ancestors (?!'none')/;

const DOCS_CSP = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'";

/** Registers the security response headers (and `x-request-id`), the URL guards and the JSON depth limit on the Fastify instance. */
export function registerSecurityHooks(fastify: FastifyInstance, config: AppConfig): void {
  // Callback-style hooks (not async): one of each runs on every request, and an
  // async hook costs a promise and a microtask turn each time.
  fastify.addHook('onSend', (req: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    void reply.header('x-request-id', req.id);
    // Swagger UI at /docs ships an inline <style>; everything else stays strict.
    if (req.url.startsWith('/docs') && !reply.hasHeader('content-security-policy')) void reply.header('content-security-policy', DOCS_CSP);
    for (const [name, value] of SECURITY_HEADER_LIST) {
      // A page that names who may frame it (the receiver portal, PORTAL_FRAME_ANCESTORS) is not also denied to all.
      if (name === 'x-frame-options' && FRAMEABLE.test(String(reply.getHeader('content-security-policy') ?? ''))) continue;
      if (!reply.hasHeader(name)) void reply.header(name, value);
    }
    done(null, payload);
  });

  // A NUL decoded from the path or query would reach Postgres text and fail there
  // (500); a repeated query parameter arrives as an array where routes expect a string.
  fastify.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (/%00/i.test(req.url)) return refuse(req, reply, 400, 'validation_failed', 'URLs must not contain NUL (%00)');
    const repeated = Object.entries((req.query ?? {}) as Record<string, unknown>).find(([, v]) => Array.isArray(v));
    if (repeated) return refuse(req, reply, 400, 'validation_failed', `query parameter ${JSON.stringify(repeated[0].slice(0, 50))} is given more than once`);
    done();
  });

  // Before Nest's pipes turn the body into DTOs (recursively): the API takes JSON
  // only, and a hostile document nested thousands deep is refused here.
  const limit = config.maxJsonDepth + ENVELOPE_DEPTH;
  fastify.addHook('preValidation', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (req.body === undefined || !(req.url.startsWith('/v1/') || req.url.startsWith('/portal/api/'))) return done();
    if (!JSON_TYPE.test(req.headers['content-type'] ?? '')) {
      return refuse(req, reply, 415, 'unsupported_media_type', 'the API takes JSON bodies only (content-type: application/json)');
    }
    if (typeof req.body === 'object' && req.body !== null && jsonDepth(req.body, limit) > limit) {
      return refuse(req, reply, 400, 'validation_failed', `request JSON is nested deeper than ${limit} levels`);
    }
    done();
  });
}

const JSON_TYPE = /^application\/([\w.+-]+\+)?json\s*(;|$)/i;

/** Answers from a hook (before Nest's filter exists for this request) with the API's error shape; the hook then does not call `done`. */
function refuse(req: FastifyRequest, reply: FastifyReply, status: number, code: string, message: string): void {
  void reply
    .code(status)
    .header('content-type', 'application/json; charset=utf-8')
    .send({ code, message, requestId: String(req.id) });
}
