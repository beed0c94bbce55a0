import { describe, expect, it } from 'vitest';
import type { ReceiverHealth, RecordedOutcome } from './outcome.types.js';
import { mergeHealth, receiverHealth } from './receiver-health.policy.js';

const at = (s: number) => new Date(Date.UTC(2026, 11, 1, 0, 0, s));
let n = 0;
const attempt = (receiverId: string | null, outcome: 'success' | 'timeout' | 'http_error', s: number): RecordedOutcome => ({
  callbackId: `c${n++}`,
  apiKeyId: 'k',
  host: 'https://x.example:443',
  number: 1,
  status: 'pending',
  nextAttemptAt: null,
  completedAt: null,
  startedAt: at(s),
  durationMs: 1,
  dnsMs: null,
  connectMs: null,
  tlsMs: null,
  tunnelMs: null,
  firstByteMs: null,
  statusCode: null,
  outcome,
  error: null,
  responseHeaders: null,
  responseBody: null,
  receiverId,
});
const all = (rows: RecordedOutcome[]) => new Set(rows.map((r) => r.callbackId));

describe(receiverHealth.name, () => {
  it.each([
    ['no receiver', [attempt(null, 'timeout', 1)], []],
    [
      'only successes',
      [attempt('a', 'success', 1), attempt('a', 'success', 2)],
      [{ receiverId: 'a', lastSuccessAt: at(2), failingSince: null, lastFailureAt: null }],
    ],
    [
      'only failures',
      [attempt('a', 'timeout', 3), attempt('a', 'http_error', 1)],
      [{ receiverId: 'a', lastSuccessAt: null, failingSince: at(1), lastFailureAt: at(3) }],
    ],
    [
      'failures after a success (in any order given)',
      [attempt('a', 'timeout', 5), attempt('a', 'success', 2), attempt('a', 'timeout', 1), attempt('a', 'timeout', 4)],
      [{ receiverId: 'a', lastSuccessAt: at(2), failingSince: at(4), lastFailureAt: at(5) }],
    ],
    [
      'a success after failures (they are behind it: none after it)',
      [attempt('a', 'timeout', 1), attempt('a', 'success', 2)],
      [{ receiverId: 'a', lastSuccessAt: at(2), failingSince: null, lastFailureAt: null }],
    ],
  ])('should read %s', (_name, rows, expected) => {
    expect(receiverHealth(rows, all(rows))).toEqual(expected);
  });

  it('should keep receivers apart and leave out attempts that did not land', () => {
    const rows = [attempt('a', 'timeout', 1), attempt('b', 'success', 1), attempt('b', 'timeout', 2)];
    const landed = new Set([rows[0].callbackId, rows[1].callbackId]);
    expect(receiverHealth(rows, landed)).toEqual([
      { receiverId: 'a', lastSuccessAt: null, failingSince: at(1), lastFailureAt: at(1) },
      { receiverId: 'b', lastSuccessAt: at(1), failingSince: null, lastFailureAt: null },
    ]);
  });
});

describe(mergeHealth.name, () => {
  const row = (success: number | null, failingSince: number | null = null, lastFailure: number | null = null): ReceiverHealth => ({
    receiverId: 'r',
    lastSuccessAt: success === null ? null : at(success),
    failingSince: failingSince === null ? null : at(failingSince),
    lastFailureAt: lastFailure === null ? null : at(lastFailure),
  });
  const ms = (s: number) => new Date(at(0).getTime() + s);

  it('should start a failure record after the latest success, and say it started', () => {
    expect(mergeHealth([row(10)], [row(null, 12, 14)])).toEqual([{ ...row(10, 12, 14), startedFailing: true }]);
  });

  it('should not start one with a failure older than a recorded success', () => {
    expect(mergeHealth([row(10)], [row(null, 5, 5)])).toEqual([{ ...row(10, null, 5), startedFailing: false }]);
  });

  it('should end a failure record with a later success, and not with an older one', () => {
    expect(mergeHealth([row(1, 20, 20)], [row(25)])).toEqual([{ ...row(25, null, 20), startedFailing: false }]);
    expect(mergeHealth([row(1, 20, 20)], [row(15)])).toEqual([{ ...row(15, 20, 20), startedFailing: false }]); // still failing since 20
    expect(mergeHealth([row(15, 20, 20)], [row(null, 18, 18)])).toEqual([{ ...row(15, 18, 20), startedFailing: false }]);
    // a success landing between the row's first and last failure: still failing, since the last one (the first after it known)
    expect(mergeHealth([row(1, 10, 20)], [row(15)])).toEqual([{ ...row(15, 20, 20), startedFailing: false }]);
  });

  it('should write a healthy receiver only once its success is a second newer', () => {
    const stored = { ...row(null), lastSuccessAt: ms(0) };
    expect(mergeHealth([stored], [{ ...row(null), lastSuccessAt: ms(900) }])).toEqual([]);
    expect(mergeHealth([stored], [{ ...row(null), lastSuccessAt: ms(1_001) }])).toEqual([{ ...row(null), lastSuccessAt: ms(1_001), startedFailing: false }]);
  });

  it('should leave out receivers it has no row of (deleted meanwhile)', () => {
    expect(mergeHealth([], [row(null, 3, 3)])).toEqual([]);
  });
});
