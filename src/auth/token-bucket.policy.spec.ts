import { describe, expect, it } from 'vitest';
import { takeToken, tokensAt, type Bucket } from './token-bucket.policy.js';

describe('takeToken', () => {
  const limits = { perSec: 2, burst: 3 };

  it.each<[string, Bucket | undefined, number, boolean, number, number | undefined]>([
    // name, bucket, now, ok, tokens after, retryAfterSec
    ['a new key starts with a full burst', undefined, 1_000, true, 2, undefined],
    ['a key with tokens left is served', { tokens: 1.5, atMs: 1_000 }, 1_000, true, 0.5, undefined],
    ['an empty bucket refuses', { tokens: 0, atMs: 1_000 }, 1_000, false, 0, 1],
    ['a half token is not enough', { tokens: 0.5, atMs: 1_000 }, 1_000, false, 0.5, 1],
    ['refills at perSec: 500 ms gives one token', { tokens: 0, atMs: 1_000 }, 1_500, true, 0, undefined],
    ['refill stops at burst', { tokens: 0, atMs: 1_000 }, 60_000, true, 2, undefined],
    ['a clock going backwards refills nothing', { tokens: 0, atMs: 5_000 }, 4_000, false, 0, 1],
  ])('%s', (_name, bucket, now, ok, tokens, retryAfterSec) => {
    const r = takeToken(bucket, limits, now);
    expect(r.ok).toBe(ok);
    expect(r.bucket.tokens).toBeCloseTo(tokens, 9);
    expect(r.bucket.atMs).toBe(now);
    expect(r.ok ? undefined : r.retryAfterSec).toBe(retryAfterSec);
  });

  it('should ask a slow-rate client to wait whole seconds until the next token', () => {
    const r = takeToken({ tokens: 0.25, atMs: 0 }, { perSec: 0.25 as number, burst: 1 }, 0);
    expect(r).toMatchObject({ ok: false, retryAfterSec: 3 });
  });

  it('should never refuse when the rate is 0 (limiting off)', () => {
    let bucket: Bucket | undefined;
    for (let i = 0; i < 1000; i++) {
      const r = takeToken(bucket, { perSec: 0, burst: 1 }, 0);
      expect(r.ok).toBe(true);
      bucket = r.bucket;
    }
  });

  it('should serve exactly burst requests at one instant, then refuse', () => {
    let bucket: Bucket | undefined;
    const answers = Array.from({ length: 5 }, () => {
      const r = takeToken(bucket, limits, 10_000);
      bucket = r.bucket;
      return r.ok;
    });
    expect(answers).toEqual([true, true, true, false, false]);
  });
});

describe('tokensAt', () => {
  it.each<[Bucket | undefined, number, number]>([
    [undefined, 0, 3],
    [{ tokens: 0, atMs: 0 }, 0, 0],
    [{ tokens: 0, atMs: 0 }, 250, 0.5],
    [{ tokens: 1, atMs: 0 }, 10_000, 3],
  ])('%j at %d ms holds %d tokens', (bucket, now, tokens) => {
    expect(tokensAt(bucket, { perSec: 2, burst: 3 }, now)).toBeCloseTo(tokens, 9);
  });
});
