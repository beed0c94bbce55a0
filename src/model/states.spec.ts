import { describe, expect, it } from 'vitest';
import { CALLBACK_STATUSES } from './states.js';

describe('callback statuses', () => {
  it('should have only in_flight and pending in the range UNFINISHED_RANGE names, in any collation (first letters all differ)', () => {
    const sorted = [...CALLBACK_STATUSES].sort();
    expect(sorted.slice(sorted.indexOf('in_flight'), sorted.indexOf('pending') + 1)).toEqual(['in_flight', 'pending']);
    expect(new Set(CALLBACK_STATUSES.map((s) => s[0])).size).toBe(CALLBACK_STATUSES.length);
  });
});
