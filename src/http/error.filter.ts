import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { databaseTimeoutOf, isDatabaseUnavailable, transientConflictOf } from '../database/database.errors.js';
import { AppError, ErrorCode } from '../common/app.error.js';

export interface ErrorBody {
  code: string;
  message: string;
  details?: unknown;
  requestId: string;
}

const STATUS_CODES: Record<number, ErrorCode> = {
  400: 'validation_failed',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  503: 'not_ready',
};

/**
 * The one place errors become responses: every error leaves as
 * `{code, message, details?, requestId}`. App errors carry their code; Nest and
 * Fastify errors (unknown route, body too large, malformed JSON) are mapped by
 * status; anything else is a 500, logged once with the request id and never echoed.
 */
@Catch()
export class ErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('Error');

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const request = ctx.getRequest<FastifyRequest>();
    const reply = ctx.getResponse<FastifyReply>();
    const { status, body, headers } = this.toResponse(exception, String(request.id));
    if (status === 500) {
      this.logger.error({ requestId: body.requestId, method: request.method, url: request.url }, (exception as Error)?.stack ?? String(exception));
    }
    for (const [k, v] of Object.entries(headers)) void reply.header(k, v);
    void reply.status(status).header('content-type', 'application/json; charset=utf-8').send(body);
  }

  toResponse(exception: unknown, requestId: string): { status: number; body: ErrorBody; headers: Record<string, string> } {
    if (exception instanceof AppError) {
      return {
        status: exception.status,
        body: { code: exception.code, message: exception.message, details: exception.details, requestId },
        headers: exception.headers ?? {},
      };
    }
    const status = statusOf(exception);
    if (status !== undefined && status < 500) {
      // Nest wraps Fastify's own errors (bad JSON, wrong media type) in an HttpException with the original as cause.
      const fastifyCode = (exception as { code?: string }).code ?? (exception as { cause?: { code?: string } }).cause?.code;
      const code: ErrorCode =
        fastifyCode === 'FST_ERR_CTP_INVALID_JSON_BODY' || exception instanceof SyntaxError ? 'malformed_json' : (STATUS_CODES[status] ?? 'validation_failed');
      return { status, body: { code, message: messageOf(exception, status), requestId }, headers: {} };
    }
    const timeout = databaseTimeoutOf(exception);
    if (timeout) {
      this.logger.warn({ msg: `database timeout: ${errorText(exception)}`, event: 'db_timeout', timeout, requestId });
      return retryShortly('db_timeout', DB_TIMEOUT_MESSAGES[timeout], requestId);
    }
    const conflict = transientConflictOf(exception);
    if (conflict) {
      this.logger.warn({ msg: `database conflict: ${errorText(exception)}`, event: 'db_conflict', conflict, requestId });
      return retryShortly('db_conflict', DB_CONFLICT_MESSAGES[conflict], requestId);
    }
    if (isDatabaseUnavailable(exception)) {
      return {
        status: 503,
        body: { code: 'not_ready', message: 'the database is unavailable; retry shortly', requestId },
        headers: { 'retry-after': '1' },
      };
    }
    return { status: 500, body: { code: 'internal_error', message: 'internal error', requestId }, headers: {} };
  }
}

function statusOf(exception: unknown): number | undefined {
  if (exception instanceof HttpException) return exception.getStatus();
  const s = (exception as { statusCode?: unknown })?.statusCode;
  return typeof s === 'number' && s >= 400 && s < 600 ? s : undefined;
}

function messageOf(exception: unknown, status: number): string {
  if (exception instanceof HttpException) {
    const r = exception.getResponse();
    const m = typeof r === 'string' ? r : (r as { message?: unknown }).message;
    return Array.isArray(m) ? m.join('; ') : String(m ?? exception.message);
  }
  if (status === 413) return 'request body is too large';
  return (exception as Error)?.message ?? 'bad request';
}

const DB_TIMEOUT_MESSAGES = {
  lock: 'a database statement waited for a lock longer than DATABASE_LOCK_TIMEOUT_MS and was cancelled; retry shortly',
  statement: 'a database statement ran longer than DATABASE_STATEMENT_TIMEOUT_MS and was cancelled; retry shortly',
} as const;

const DB_CONFLICT_MESSAGES = {
  deadlock: 'the database ended this request to resolve a deadlock with another; nothing of it was stored; retry shortly',
  serialization: 'the database ended this request because a row it needed changed concurrently; nothing of it was stored; retry shortly',
} as const;

const errorText = (exception: unknown): string => (exception as Error)?.message ?? String(exception);

/** A 503 the client should simply retry in a second: a database timeout or conflict. */
function retryShortly(code: ErrorCode, message: string, requestId: string): { status: number; body: ErrorBody; headers: Record<string, string> } {
  return { status: 503, body: { code, message, requestId }, headers: { 'retry-after': '1' } };
}
