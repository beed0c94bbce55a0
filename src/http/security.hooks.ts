import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest, RawServerDefault } from 'fastify';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import type { AppConfig } from '../config/app.config.js';
import { AppError } from '../common/app.error.js';
import { isAdmitted } from './request.admission.js';

/** Levels a request may nest around its callback bodies (`{callbacks:[{body:…}]}` and slack). */
export const ENVELOPE_DEPTH = 4;

/**
 * Bytes of body a request without a credential may send (no public route takes a
 * body): MAX_REQUEST_BYTES applies only once a key or portal session is known.
 */
export const UNAUTHENTICATED_BODY_BYTES = 16 * 1024;

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

/** Registers the security response headers (and `x-request-id`), the URL guards, the body limit before authentication and the JSON-only rule on the Fastify instance. */
export function registerSecurityHooks(fastify: FastifyInstance): void {
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

  // After authentication (auth.hooks.ts), before any byte of a body is read: a request
  // no credential admitted (a public route, an unknown one) may send only a little.
  fastify.addHook('preParsing', (req: FastifyRequest, reply: FastifyReply, payload: Readable, done: (err: Error | null, body?: Readable) => void) => {
    if (isAdmitted(req) || !hasBody(req)) return done(null, payload);
    if (Number(req.headers['content-length']) > UNAUTHENTICATED_BODY_BYTES) {
      void reply.header('connection', 'close');
      return done(tooLargeUnauthenticated());
    }
    done(null, payload.pipe(new ByteLimit(UNAUTHENTICATED_BODY_BYTES)));
  });

  // The API takes JSON only (Nest's pipes then turn it into DTOs); the JSON parser
  // bounds its nesting (registerJsonParser).
  fastify.addHook('preValidation', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (req.body === undefined || !(req.url.startsWith('/v1/') || req.url.startsWith('/portal/api/'))) return done();
    if (!JSON_TYPE.test(req.headers['content-type'] ?? '')) {
      return refuse(req, reply, 415, 'unsupported_media_type', 'the API takes JSON bodies only (content-type: application/json)');
    }
    done();
  });
}

/**
 * The application/json parser: the raw body's nesting is measured in one pass over its
 * bytes (jsonExceedsDepth) before JSON.parse builds anything, so a hostile `[[[[…`
 * costs a scan, not millions of nested arrays built on the event loop; then Fastify's
 * own parser (`__proto__` and `constructor.prototype` keys refused) parses it.
 */
export function registerJsonParser(app: NestFastifyApplication, config: AppConfig): void {
  const limit = config.maxJsonDepth + ENVELOPE_DEPTH;
  const parse = app.getHttpAdapter().getInstance().getDefaultJsonParser('error', 'error');
  app.useBodyParser<RawServerDefault>('application/json', { bodyLimit: config.maxRequestBytes }, (req, body, done) => {
    if (jsonExceedsDepth(body, limit)) return done(new AppError('validation_failed', `request JSON is nested deeper than ${limit} levels`));
    void parse(req, body.toString('utf8'), done);
  });
}

/**
 * True as soon as the JSON text in `bytes` opens more than `limit` arrays or objects
 * that are still open: brackets inside strings (escapes respected) do not count. It
 * reads bytes, not characters: the quote, the backslash, brackets and braces are
 * ASCII, and no byte of a multi-byte UTF-8 character is. Text that is not JSON may be
 * counted wrongly; JSON.parse refuses it after, having built no deeper than allowed.
 */
export function jsonExceedsDepth(bytes: Uint8Array, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i];
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
  }
  return false;
}

const [QUOTE, BACKSLASH, OPEN_ARRAY, CLOSE_ARRAY, OPEN_OBJECT, CLOSE_OBJECT] = ['"', '\\', '[', ']', '{', '}'].map((c) => c.charCodeAt(0));

/** Whether the request announces a body (a length above 0, or chunks). */
function hasBody(req: FastifyRequest): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

const tooLargeUnauthenticated = () =>
  new AppError('payload_too_large', `a request without a valid credential may send at most ${UNAUTHENTICATED_BODY_BYTES} bytes of body`);

/** Passes a body through until it exceeds `limit` bytes, then fails it with a 413. */
class ByteLimit extends Transform {
  private seen = 0;

  constructor(private readonly limit: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen > this.limit) return callback(Object.assign(tooLargeUnauthenticated(), { statusCode: 413 }));
    callback(null, chunk);
  }
}

const JSON_TYPE = /^application\/([\w.+-]+\+)?json\s*(;|$)/i;

/** Answers from a hook (before Nest's filter exists for this request) with the API's error shape; the hook then does not call `done`. */
function refuse(req: FastifyRequest, reply: FastifyReply, status: number, code: string, message: string): void {
  void reply
    .code(status)
    .header('content-type', 'application/json; charset=utf-8')
    .send({ code, message, requestId: String(req.id) });
}
