import { describe, expect, it } from 'vitest';
import type { RecordedOutcome } from './outcome.repository.js';
import { receiverHealth } from './receiver-health.policy.js';

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
