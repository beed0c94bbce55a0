import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app.error.js';
import { AppConfig } from '../config/app.config.js';
import { takeToken, type Bucket } from './token-bucket.policy.js';

/** Buckets kept; beyond this the idle ones (full again by now) are dropped. */
const MAX_BUCKETS = 100_000;

/**
 * Per-key API rate limit (API_RATE_LIMIT_PER_SEC, API_RATE_LIMIT_BURST): a token
 * bucket per key, in this process. With N API replicas a key may make N times the
 * rate in all; that is the documented trade for a check that costs no query.
 */
@Injectable()
export class RateLimitService {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly config: AppConfig) {}

  /** Counts one request of `keyId`; throws `rate_limited` (429, Retry-After) when over. */
  admit(keyId: string, nowMs = Date.now()): void {
    const limits = { perSec: this.config.apiRateLimitPerSec, burst: this.config.apiRateLimitBurst };
    if (limits.perSec === 0) return;
    const result = takeToken(this.buckets.get(keyId), limits, nowMs);
    if (this.buckets.size >= MAX_BUCKETS && !this.buckets.has(keyId)) this.dropIdle(nowMs, limits.burst / limits.perSec);
    this.buckets.set(keyId, result.bucket);
    if (!result.ok) {
      throw new AppError(
        'rate_limited',
        `rate limit of ${limits.perSec} requests per second (burst ${limits.burst}) exceeded for this key; retry in ${result.retryAfterSec} s`,
        { retryAfterSec: result.retryAfterSec },
        { 'retry-after': String(result.retryAfterSec) },
      );
    }
  }

  /** Forgets buckets that have been idle long enough to be full again (same as new). */
  private dropIdle(nowMs: number, refillSec: number): void {
    for (const [id, b] of this.buckets) if (nowMs - b.atMs >= refillSec * 1000) this.buckets.delete(id);
  }
}
