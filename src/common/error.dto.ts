import { applyDecorators } from '@nestjs/common';
import { ApiExtraModels, ApiProperty, ApiPropertyOptional, ApiResponse, getSchemaPath } from '@nestjs/swagger';
import { ERROR_STATUS, type ErrorCode } from './app.error.js';

/** The one error body of the API (see ErrorFilter): clients branch on `code`, never on `message`. */
export class ErrorDto {
  @ApiProperty({ enum: Object.keys(ERROR_STATUS), description: 'Stable error code' }) code: ErrorCode;
  @ApiProperty({ description: 'What went wrong, for people' }) message: string;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'Machine-readable detail, e.g. `problems` of a validation error' })
  details?: unknown;
  @ApiProperty({ description: 'The request id (also the `x-request-id` response header)' }) requestId: string;
}

/** When each status is answered, as the OpenAPI document says it. */
const WHEN = {
  400: 'validation_failed (query, path or body) or malformed_json',
  401: 'unauthorized: no key, or an unknown or revoked key',
  403: 'forbidden: the route needs an admin key',
  404: 'not_found',
  409: 'idempotency_conflict or conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type: the API takes JSON bodies only',
  429: 'rate_limited; `retry-after` says when to try again',
  500: 'internal_error, logged with the request id',
  503: 'not_ready: the database is unavailable; or db_timeout: a statement ran past DATABASE_STATEMENT_TIMEOUT_MS or waited for a lock past DATABASE_LOCK_TIMEOUT_MS and was cancelled; or db_conflict: the database ended the transaction of the request to resolve a deadlock or a concurrent update (after retries, where the service can retry it), nothing of it was stored; `retry-after` says when to try again',
} as const;

export type ErrorStatus = keyof typeof WHEN;

/**
 * The error body as JSON, whatever the route's own answer is: `type: ErrorDto` would
 * take the route's `@ApiProduces` (GET /metrics: text/plain), and the filter always
 * answers errors in JSON.
 */
const ERROR_CONTENT = { 'application/json': { schema: { $ref: getSchemaPath(ErrorDto) } } };

/** Documents the error answers of a route (or of every route of a controller) with the error body. */
export function ApiErrors(...statuses: ErrorStatus[]): MethodDecorator & ClassDecorator {
  return applyDecorators(ApiExtraModels(ErrorDto), ...statuses.map((status) => ApiResponse({ status, description: WHEN[status], content: ERROR_CONTENT })));
}

/** A batch's 429s: the rate limit's, and MAX_PENDING_PER_KEY's (PendingQuota). */
export const ApiQuotaErrors = () =>
  applyDecorators(
    ApiExtraModels(ErrorDto),
    ApiResponse({
      status: 429,
      description:
        'rate_limited (`retry-after` says when to try again), or quota_exceeded: the batch would take the key past MAX_PENDING_PER_KEY pending callbacks; `details` has `{pending, maxPending, batch}`, nothing was stored',
      content: ERROR_CONTENT,
    }),
  );

/** The answers every route of the API can give: a repeated query parameter or a NUL (400), a failure (500). */
export const ApiCommonErrors = () => ApiErrors(400, 500);

/** The answers of every authenticated /v1 route besides its own: no key, rate limit, database down. */
export const ApiAuthErrors = () => ApiErrors(400, 401, 429, 500, 503);
