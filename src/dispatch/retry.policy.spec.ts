import { describe, expect, it } from 'vitest';
import { isRetryable, nextState, retryAfterMs, retryDelayMs, type AttemptResult, type RetrySettings } from './retry.policy.js';

const settings: RetrySettings = { maxAttempts: 4, retryDelaysMs: [1000, 5000, 60000], jitterPermille: 200, retryAfterMaxMs: 10_000 };
const NOW = Date.parse('2026-11-30T12:00:00Z');

describe('retry.policy', () => {
  it.each<[AttemptResult, boolean]>([
    [{ outcome: 'success', statusCode: 200 }, false],
    [{ outcome: 'http_error', statusCode: 500 }, true],
    [{ outcome: 'http_error', statusCode: 503 }, true],
    [{ outcome: 'http_error', statusCode: 408 }, true],
    [{ outcome: 'http_error', statusCode: 429 }, true],
    [{ outcome: 'http_error', statusCode: 400 }, false],
    [{ outcome: 'http_error', statusCode: 404 }, false],
    [{ outcome: 'http_error', statusCode: 410 }, false],
    [{ outcome: 'http_error', statusCode: 301 }, false],
    [{ outcome: 'http_error', statusCode: 302 }, false],
    [{ outcome: 'timeout' }, true],
    [{ outcome: 'connect_error' }, true],
    [{ outcome: 'dns_error' }, true],
    [{ outcome: 'tls_error' }, true],
    [{ outcome: 'network_error' }, true],
    [{ outcome: 'blocked' }, false],
    [{ outcome: 'auth_error' }, true],
  ])('should decide %j retryable=%s', (result, expected) => {
    expect(isRetryable(result)).toBe(expected);
  });

  it.each([
    [1, 0, 800],
    [1, 0.5, 1000],
    [1, 0.999999, 1200],
    [2, 0.5, 5000],
    [3, 0.5, 60000],
    [7, 0.5, 60000],
  ])('should delay attempt %i+1 (random %f) by %i ms, the last delay repeating', (attempt, random, expected) => {
    expect(retryDelayMs(attempt, settings, random)).toBe(expected);
  });

  it('should keep every jittered delay within ±20%', () => {
    for (let i = 0; i < 1000; i++) {
      const d = retryDelayMs(2, settings);
      expect(d).toBeGreaterThanOrEqual(4000);
      expect(d).toBeLessThanOrEqual(6000);
    }
  });

  it.each<[string | undefined, number | undefined]>([
    [undefined, undefined],
    ['', undefined],
    ['soon', undefined],
    ['3', 3000],
    [' 7 ', 7000],
    ['0', 0],
    ['100000', 10_000],
    ['Mon, 30 Nov 2026 12:00:05 GMT', 5000],
    ['Mon, 30 Nov 2026 11:00:00 GMT', 0],
  ])('should read Retry-After %j as %j ms', (header, expected) => {
    expect(retryAfterMs(header, NOW, settings.retryAfterMaxMs)).toBe(expected);
  });

  it('should succeed on success', () => {
    expect(nextState({ outcome: 'success', statusCode: 204 }, 1, settings, NOW)).toEqual({ status: 'succeeded' });
  });

  it('should fail at once on a permanent error', () => {
    expect(nextState({ outcome: 'http_error', statusCode: 404 }, 1, settings, NOW)).toEqual({ status: 'failed' });
  });

  it('should schedule a retry with the jittered delay', () => {
    expect(nextState({ outcome: 'timeout' }, 1, settings, NOW, 0.5)).toEqual({ status: 'pending', nextAttemptAt: new Date(NOW + 1000) });
  });

  it('should prefer a capped Retry-After to the schedule', () => {
    expect(nextState({ outcome: 'http_error', statusCode: 429, retryAfter: '2' }, 1, settings, NOW)).toEqual({
      status: 'pending',
      nextAttemptAt: new Date(NOW + 2000),
    });
    expect(nextState({ outcome: 'http_error', statusCode: 503, retryAfter: '86400' }, 1, settings, NOW)).toEqual({
      status: 'pending',
      nextAttemptAt: new Date(NOW + 10_000),
    });
  });

  it('should fail after the last attempt', () => {
    expect(nextState({ outcome: 'http_error', statusCode: 500 }, 4, settings, NOW)).toEqual({ status: 'failed' });
  });

  it('should retry at once when the schedule is empty', () => {
    expect(nextState({ outcome: 'timeout' }, 1, { ...settings, retryDelaysMs: [] }, NOW)).toEqual({ status: 'pending', nextAttemptAt: new Date(NOW) });
  });
});
