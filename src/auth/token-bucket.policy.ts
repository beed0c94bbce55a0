/** One key's bucket: tokens left at `atMs`. */
export interface Bucket {
  tokens: number;
  atMs: number;
}

export interface BucketLimits {
  /** Tokens added per second; 0 turns limiting off. */
  perSec: number;
  /** Most tokens a bucket holds (the burst a key may make at once). */
  burst: number;
}

export type TakeResult = { ok: true; bucket: Bucket } | { ok: false; bucket: Bucket; retryAfterSec: number };

/**
 * Takes one token from `bucket` (undefined: a full new bucket) at `nowMs`. Tokens
 * refill continuously at `perSec` up to `burst`. When none is left the answer says
 * how many whole seconds until one is (at least 1), for `Retry-After`.
 */
export function takeToken(bucket: Bucket | undefined, limits: BucketLimits, nowMs: number): TakeResult {
  const tokens = tokensAt(bucket, limits, nowMs);
  if (limits.perSec === 0 || tokens >= 1) return { ok: true, bucket: { tokens: tokens - 1, atMs: nowMs } };
  const retryAfterSec = Math.max(1, Math.ceil((1 - tokens) / limits.perSec));
  return { ok: false, bucket: { tokens, atMs: nowMs }, retryAfterSec };
}

/** Tokens `bucket` holds at `nowMs` after refilling (a new bucket is full). */
export function tokensAt(bucket: Bucket | undefined, limits: BucketLimits, nowMs: number): number {
  if (!bucket) return limits.burst;
  const elapsedSec = Math.max(0, nowMs - bucket.atMs) / 1000;
  return Math.min(limits.burst, bucket.tokens + elapsedSec * limits.perSec);
}
