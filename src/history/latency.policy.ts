import { AppError } from '../common/app.error.js';

/** Bucket widths the history API offers, in ms. */
export const BUCKETS = { '1m': 60_000, '5m': 300_000, '1h': 3_600_000, '1d': 86_400_000 } as const;
export type Bucket = keyof typeof BUCKETS;
export const BUCKET_NAMES = Object.keys(BUCKETS) as Bucket[];

/** Without `from`, the window is the last day before `to`. */
export const DEFAULT_RANGE_MS = 86_400_000;
/** The default bucket is the finest giving at most this many buckets (24 h → 5m, 30 d → 1h). */
export const TARGET_BUCKETS = 1000;
/** A chosen bucket may not cut the range into more than this many (a week of minutes). */
export const MAX_BUCKETS = 10_080;

export interface LatencyWindow {
  from: Date;
  to: Date;
  bucket: Bucket;
  bucketMs: number;
}

/**
 * Resolves the query's time window and bucket: `to` defaults to now, `from` to a
 * day before `to`, the bucket to the finest one with at most TARGET_BUCKETS
 * buckets. Throws validation_failed for an empty or inverted range, an unknown
 * bucket, or one that would cut the range into more than MAX_BUCKETS.
 */
export function resolveLatencyWindow(q: { from?: Date; to?: Date; bucket?: string }, now: Date): LatencyWindow {
  const to = q.to ?? now;
  const from = q.from ?? new Date(to.getTime() - DEFAULT_RANGE_MS);
  const span = to.getTime() - from.getTime();
  if (span <= 0) throw new AppError('validation_failed', 'from must be before to');
  if (q.bucket !== undefined && !(q.bucket in BUCKETS)) {
    throw new AppError('validation_failed', `bucket must be one of ${BUCKET_NAMES.join(', ')}`);
  }
  const bucket = (q.bucket as Bucket | undefined) ?? defaultBucket(span);
  const count = Math.ceil(span / BUCKETS[bucket]);
  if (count > MAX_BUCKETS) {
    throw new AppError(
      'validation_failed',
      `bucket ${bucket} cuts this range into ${count} buckets; at most ${MAX_BUCKETS}: pick a wider bucket or a shorter range`,
    );
  }
  return { from, to, bucket, bucketMs: BUCKETS[bucket] };
}

export function defaultBucket(spanMs: number): Bucket {
  return BUCKET_NAMES.find((b) => spanMs / BUCKETS[b] <= TARGET_BUCKETS) ?? '1d';
}
