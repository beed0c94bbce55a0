import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app.error.js';
import { AppConfig } from '../config/app.config.js';
import { takeToken, tokensAt, type Bucket, type BucketLimits } from './token-bucket.policy.js';

/** Buckets kept per kind; beyond this the idle ones (full again by now) are dropped. */
const MAX_BUCKETS = 100_000;

/**
 * Per-key API rate limit (API_RATE_LIMIT_PER_SEC, API_RATE_LIMIT_BURST) and a limit on
 * failed authentications (API_AUTH_FAILURES_*), so a flood of guessed keys neither
 * reaches the database nor makes guessing cheap. A failure counts against the client
 * address (req.ip: the socket's, or the client a TRUSTED_PROXIES proxy names) and the
 * presented key prefix, so guesses spread over many addresses are held off too; a key
 * this process verified before passes either hold (the authentication hook), so wrong
 * keys from one address never lock out everyone behind it. Buckets are per process:
 * with N API replicas a client may make N times the rate, the trade for a check that
 * costs no query. Not @fastify/rate-limit, which counts one key per request: a request
 * counts against its authenticated key, a failure against two.
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

  /** Before a credential is checked: throws 429 while `client`, or the presented key's `prefix`, has no failed attempts left. */
  checkFailures(client: string, prefix?: string, nowMs = Date.now()): void {
    const limits = this.failureLimits();
    if (limits.perSec === 0) return;
    const retryAfterSec = Math.max(1, Math.ceil(1 / limits.perSec));
    if (tokensAt(this.failures.get(`address ${client}`), limits, nowMs) < 1) {
      throw rateLimited('too many requests with a missing or wrong API key from this address', retryAfterSec);
    }
    if (prefix !== undefined && tokensAt(this.failures.get(`prefix ${prefix}`), limits, nowMs) < 1) {
      throw rateLimited('too many wrong API keys beginning as this one', retryAfterSec);
    }
  }

  /** A wrong credential from `client` (presented with key prefix `prefix`): spends one failed attempt of each. */
  recordFailure(client: string, prefix?: string, nowMs = Date.now()): void {
    const limits = this.failureLimits();
    if (limits.perSec === 0) return;
    for (const id of prefix === undefined ? [`address ${client}`] : [`address ${client}`, `prefix ${prefix}`]) {
      this.store(this.failures, id, takeToken(this.failures.get(id), limits, nowMs).bucket, limits, nowMs);
    }
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
