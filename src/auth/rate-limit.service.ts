import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app.error.js';
import { AppConfig } from '../config/app.config.js';
import { takeToken, tokensAt, type Bucket, type BucketLimits } from './token-bucket.policy.js';

/** Buckets kept per kind; beyond this the idle ones (full again by now) are dropped. */
const MAX_BUCKETS = 100_000;

/**
 * Per-key API rate limit (API_RATE_LIMIT_PER_SEC, API_RATE_LIMIT_BURST) and a limit
 * on failed authentications per client address (API_AUTH_FAILURES_*), so a flood of
 * guessed keys neither reaches the database nor makes guessing cheap. Token buckets
 * in this process: with N API replicas a client may make N times the rate in all;
 * that is the documented trade for a check that costs no query.
 */
@Injectable()
export class RateLimitService {
  private readonly keys = new Map<string, Bucket>();
  private readonly failures = new Map<string, Bucket>();

  constructor(private readonly config: AppConfig) {}

  /** Counts one request of `keyId`; throws `rate_limited` (429, Retry-After) when over. */
  admit(keyId: string, nowMs = Date.now()): void {
    const limits = { perSec: this.config.apiRateLimitPerSec, burst: this.config.apiRateLimitBurst };
    this.take(this.keys, keyId, limits, nowMs, `rate limit of ${limits.perSec} requests per second (burst ${limits.burst}) exceeded for this key`);
  }

  /** Before a key is checked: throws 429 while `client` has no failed attempts left. */
  checkFailures(client: string, nowMs = Date.now()): void {
    const limits = this.failureLimits();
    if (limits.perSec === 0 || tokensAt(this.failures.get(client), limits, nowMs) >= 1) return;
    throw rateLimited('too many requests with a missing or wrong API key from this address', Math.max(1, Math.ceil(1 / limits.perSec)));
  }

  /** A missing or wrong key from `client`: spends one of its failed attempts. */
  recordFailure(client: string, nowMs = Date.now()): void {
    const limits = this.failureLimits();
    if (limits.perSec === 0) return;
    this.store(this.failures, client, takeToken(this.failures.get(client), limits, nowMs).bucket, limits, nowMs);
  }

  private failureLimits(): BucketLimits {
    return { perSec: this.config.apiAuthFailuresPerSec, burst: this.config.apiAuthFailuresBurst };
  }

  private take(map: Map<string, Bucket>, id: string, limits: BucketLimits, nowMs: number, what: string): void {
    if (limits.perSec === 0) return;
    const result = takeToken(map.get(id), limits, nowMs);
    this.store(map, id, result.bucket, limits, nowMs);
    if (!result.ok) throw rateLimited(what, result.retryAfterSec);
  }

  private store(map: Map<string, Bucket>, id: string, bucket: Bucket, limits: BucketLimits, nowMs: number): void {
    // Buckets idle long enough to be full again are the same as new ones: forget them.
    if (map.size >= MAX_BUCKETS && !map.has(id)) {
      for (const [k, b] of map) if (nowMs - b.atMs >= (limits.burst / limits.perSec) * 1000) map.delete(k);
    }
    map.set(id, bucket);
  }
}

function rateLimited(what: string, retryAfterSec: number): AppError {
  return new AppError('rate_limited', `${what}; retry in ${retryAfterSec} s`, { retryAfterSec }, { 'retry-after': String(retryAfterSec) });
}
