import { Injectable, PipeTransform } from '@nestjs/common';
import { AppError } from './app.error.js';
import { isUuid } from './uuid.js';

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

export function dateParam(name: string, raw: string | undefined): Date | undefined {
  if (raw === undefined || raw === '') return undefined;
  const d = new Date(raw);
  if (Number.isNaN(d.getTime())) throw new AppError('validation_failed', `${name} must be an ISO-8601 time`);
  return d;
}
