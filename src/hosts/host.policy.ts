import { AppError } from '../common/app.error.js';
import { destinationParam } from '../common/params.js';

/** The destination named by a `:host` path parameter (URL-encoded). */
export function destinationPathParam(raw: string): string {
  return destinationParam('host', raw, 'http%3A%2F%2Fexample.com%3A8080 (URL-encoded)');
}

/** `?cursor=` of GET /v1/hosts: the `nextCursor` (a destination) of the previous page. */
export function hostCursorParam(raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (raw.length > 2048 || !/^https?:\/\//.test(raw)) throw new AppError('validation_failed', 'cursor must be the nextCursor of a previous page');
  return raw;
}

/** Share of attempts that did not succeed, rounded to 4 places; null without attempts. */
export function errorRate(count: number, failed: number): number | null {
  return count === 0 ? null : Math.round((failed / count) * 10_000) / 10_000;
}
