import { describe, expect, it } from 'vitest';
import { AppError } from '../common/app.error.js';
import { defaultBucket, resolveLatencyWindow } from './latency.policy.js';

const now = new Date('2026-11-30T12:00:00.000Z');
const ago = (ms: number) => new Date(now.getTime() - ms);
const H = 3_600_000;
const D = 24 * H;

describe('resolveLatencyWindow', () => {
  it.each([
    ['1 hour', H, '1m'],
    ['16 hours', 16 * H, '1m'],
    ['1 day', D, '5m'],
    ['3 days', 3 * D, '5m'],
    ['1 week', 7 * D, '1h'],
    ['31 days', 31 * D, '1h'],
    ['1 year', 365 * D, '1d'],
    ['10 years', 3650 * D, '1d'],
  ])('should pick the finest bucket with at most 1000 buckets for %s', (_, span, bucket) => {
    expect(defaultBucket(span)).toBe(bucket);
  });

  it('should default to the last 24 hours in 5-minute buckets', () => {
    expect(resolveLatencyWindow({}, now)).toEqual({ from: ago(D), to: now, bucket: '5m', bucketMs: 300_000 });
  });

  it('should measure the default day back from a given to', () => {
    const to = ago(10 * D);
    expect(resolveLatencyWindow({ to }, now).from).toEqual(new Date(to.getTime() - D));
  });

  it('should keep an explicit bucket', () => {
    expect(resolveLatencyWindow({ from: ago(2 * H), bucket: '1d' }, now)).toMatchObject({ bucket: '1d', bucketMs: D });
  });

  it.each([
    ['an inverted range', { from: now, to: ago(H) }, /from must be before to/],
    ['an empty range', { from: now, to: now }, /from must be before to/],
    ['an unknown bucket', { bucket: '2m' }, /bucket must be one of 1m, 5m, 1h, 1d/],
    ['too many buckets', { from: ago(30 * D), bucket: '1m' }, /at most 10080/],
  ])('should refuse %s with validation_failed', (_, q, message) => {
    let error: unknown;
    try {
      resolveLatencyWindow(q, now);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('validation_failed');
    expect((error as AppError).message).toMatch(message);
  });
});
