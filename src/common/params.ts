import { Injectable, PipeTransform } from '@nestjs/common';
import { isISO8601 } from 'class-validator';
import { AppError } from './app.error.js';
import { isUuid } from './uuid.js';
import { destinationOf } from './validators.js';

/** A path id that is not a UUID cannot name anything: 404, same as a missing row. */
@Injectable()
export class UuidParam implements PipeTransform<string, string> {
  transform(value: string): string {
    if (!isUuid(value)) throw new AppError('not_found', 'no such resource');
    return value.toLowerCase();
  }
}

/** Page size from `?limit=`, 1..max, default `def`. */
export function pageLimit(raw: string | undefined, def = 100, max = 1000): number {
  if (raw === undefined) return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new AppError('validation_failed', `limit must be an integer from 1 to ${max}`);
  return n;
}

/** Optional cursor: the id of the last item of the previous page. */
export function cursorParam(raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!isUuid(raw)) throw new AppError('validation_failed', 'cursor must be the nextCursor of a previous page');
  return raw.toLowerCase();
}

/**
 * Optional time from a query parameter, by the rule the bodies' times follow (`@IsISO8601({ strict: true })`):
 * `new Date` alone took `1` for 2001, `2024-02-30` for 1 March, and years Postgres cannot store (a 500).
 */
export function dateParam(name: string, raw: string | undefined): Date | undefined {
  if (raw === undefined || raw === '') return undefined;
  const d = typeof raw === 'string' && isISO8601(raw, { strict: true }) ? new Date(raw) : null;
  if (!d || Number.isNaN(d.getTime())) throw new AppError('validation_failed', `${name} must be an ISO-8601 time`);
  return d;
}

/**
 * A destination (`scheme://host:port`, the key callbacks and per-host limits use,
 * default port spelled out) from a parameter. Only scheme, host and port may be
 * given: a path, query or credentials would suggest a narrower destination than the
 * one meant. `example` shows the form the parameter is written in.
 */
export function destinationParam(name: string, raw: string, example = 'https://example.com:443'): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new AppError('validation_failed', `${name} must be a destination scheme://host:port, like ${example}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new AppError('validation_failed', `${name} must use http or https`);
  if (!url.hostname || url.username || url.password || url.pathname !== '/' || url.search || url.hash) {
    throw new AppError('validation_failed', `${name} must be scheme://host[:port] only, without path, query or credentials`);
  }
  return destinationOf(raw);
}

/** Optional destination query parameter (see destinationParam). */
export function optionalDestinationParam(name: string, raw: string | undefined): string | undefined {
  return raw === undefined || raw === '' ? undefined : destinationParam(name, raw);
}
