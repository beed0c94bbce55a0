import { AppError } from '../common/app.error.js';
import { destinationOf } from '../common/validators.js';

/**
 * The destination named by a `:host` path parameter (URL-encoded), as the key
 * callbacks use (`scheme://host:port`, default port spelled out). Only scheme, host
 * and port may be given: a path, query or credentials would suggest a narrower limit
 * than the one set.
 */
export function destinationParam(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new AppError('validation_failed', 'host must be a URL-encoded destination like http%3A%2F%2Fexample.com%3A8080');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new AppError('validation_failed', 'host must use http or https');
  if (!url.hostname || url.username || url.password || url.pathname !== '/' || url.search || url.hash) {
    throw new AppError('validation_failed', 'host must be scheme://host[:port] only, without path, query or credentials');
  }
  return destinationOf(raw);
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
