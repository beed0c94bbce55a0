import { describe, expect, it } from 'vitest';
import { isUuid, uuidv7 } from './uuid.js';

describe('uuidv7', () => {
  it('should make valid version-7 UUIDs carrying the time', () => {
    // The clock is read, not given: ids are monotonic per process, and files in one
    // process share the module, so a given time earlier than the last id's is not kept.
    const before = Date.now();
    const id = uuidv7();
    const after = Date.now();
    expect(isUuid(id)).toBe(true);
    expect(id[14]).toBe('7');
    expect('89ab').toContain(id[19]);
    const carried = parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    expect(carried).toBeGreaterThanOrEqual(before);
    expect(carried).toBeLessThanOrEqual(after);
  });

  it('should be strictly increasing within one millisecond and across many', () => {
    const ids = Array.from({ length: 50_000 }, () => uuidv7());
    const outOfOrder = ids.findIndex((id, i) => i > 0 && id <= ids[i - 1]);
    expect(outOfOrder).toBe(-1);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('should never hand out the same random bytes twice (regression guard for the byte pool)', () => {
    const base = Date.parse('2026-11-30T12:00:00Z');
    const tails = Array.from({ length: 20_000 }, (_, i) => uuidv7(base + 1000 + i).slice(24));
    expect(new Set(tails).size).toBe(tails.length);
  });
});
