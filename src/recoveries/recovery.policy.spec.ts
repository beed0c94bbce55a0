import { describe, expect, it } from 'vitest';
import { AppError } from '../common/app.error.js';
import { recoveryWindow } from './recovery.policy.js';

const now = new Date('2026-12-03T12:00:00.000Z');
const hours = (h: number) => new Date(now.getTime() - h * 3_600_000).toISOString();

describe(recoveryWindow.name, () => {
  it.each([
    ['a scope alone: from the first to now', { scoped: true }, { since: null, until: now }],
    ['a scope and a since', { scoped: true, since: hours(6) }, { since: new Date(hours(6)), until: now }],
    ['no scope, 31 days exactly', { scoped: false, since: hours(31 * 24) }, { since: new Date(hours(31 * 24)), until: now }],
    [
      'no scope, a window in the past',
      { scoped: false, since: hours(40 * 24), until: hours(10 * 24) },
      { since: new Date(hours(40 * 24)), until: new Date(hours(10 * 24)) },
    ],
    ['an until past now is now', { scoped: true, since: hours(1), until: hours(-5) }, { since: new Date(hours(1)), until: now }],
  ])('should take %s', (_, input, expected) => {
    expect(recoveryWindow({ ...input, now })).toEqual(expected);
  });

  it.each([
    ['no scope and no window', { scoped: false }, /receiver, host, batch or event/],
    ['no scope and a window over 31 days', { scoped: false, since: hours(31 * 24 + 1) }, /at most 31 days/],
    ['a since after until', { scoped: true, since: hours(1), until: hours(2) }, /since must be before until/],
    ['a since in the future', { scoped: true, since: hours(-1) }, /since must be before until/],
  ])('should refuse %s with a 400', (_, input, message) => {
    let error: unknown;
    try {
      recoveryWindow({ ...input, now });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).status).toBe(400);
    expect((error as AppError).message).toMatch(message);
  });
});
