import type { CallbackStatus, Outcome } from '../model/states.js';

export interface RetrySettings {
  maxAttempts: number;
  /** Delays before attempt 2, 3, …; the last one repeats. */
  retryDelaysMs: readonly number[];
  /** ± spread of each delay, in thousandths. */
  jitterPermille: number;
  /** Largest Retry-After honoured. */
  retryAfterMaxMs: number;
}

export interface AttemptResult {
  outcome: Outcome;
  statusCode?: number;
  /** Raw Retry-After header of the response, if any. */
  retryAfter?: string;
}

export interface NextState {
  status: CallbackStatus;
  /** When the next attempt is due (only when status is pending). */
  nextAttemptAt?: Date;
}

/**
 * Whether an attempt may be tried again: timeouts and network failures, and the
 * statuses that mean "later" (408, 429, 5xx). Other 4xx and 3xx are the caller's
 * problem and fail at once; `blocked` is a policy refusal, never retried. `auth_error`
 * (no OAuth2 token could be had) is retried: a token endpoint that is down comes back.
 */
export function isRetryable({ outcome, statusCode }: AttemptResult): boolean {
  switch (outcome) {
    case 'success':
    case 'blocked':
      return false;
    case 'http_error':
      return statusCode === 408 || statusCode === 429 || (statusCode !== undefined && statusCode >= 500);
    default:
      return true;
  }
}

/** Delay before attempt `attemptNumber + 1`, with jitter; `random` in [0, 1). */
export function retryDelayMs(attemptNumber: number, settings: RetrySettings, random = Math.random()): number {
  const delays = settings.retryDelaysMs;
  if (delays.length === 0) return 0;
  const base = delays[Math.min(attemptNumber - 1, delays.length - 1)];
  const spread = (base * settings.jitterPermille) / 1000;
  return Math.max(0, Math.round(base - spread + 2 * spread * random));
}

/** Retry-After as milliseconds from `now` (seconds or an HTTP date), capped; undefined if absent or bad. */
export function retryAfterMs(header: string | undefined, now: number, capMs: number): number | undefined {
  if (!header) return undefined;
  const trimmed = header.trim();
  let ms: number;
  if (/^\d+$/.test(trimmed)) ms = Number(trimmed) * 1000;
  else {
    const at = Date.parse(trimmed);
    if (Number.isNaN(at)) return undefined;
    ms = at - now;
  }
  return Math.min(Math.max(0, ms), capMs);
}

/** The state a callback moves to after attempt number `attemptNumber`. */
export function nextState(result: AttemptResult, attemptNumber: number, settings: RetrySettings, now = Date.now(), random = Math.random()): NextState {
  if (result.outcome === 'success') return { status: 'succeeded' };
  if (!isRetryable(result) || attemptNumber >= settings.maxAttempts) return { status: 'failed' };
  const delay = retryAfterMs(result.retryAfter, now, settings.retryAfterMaxMs) ?? retryDelayMs(attemptNumber, settings, random);
  return { status: 'pending', nextAttemptAt: new Date(now + delay) };
}
