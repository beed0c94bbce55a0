import { describe, expect, it } from 'vitest';
import { uuidv7 } from '../common/uuid.js';
import { MIN_TAIL_DIGITS, shortIds } from './assets/ids.js';

describe('dashboard ids', () => {
  it('should tell apart the ids of one batch, made in the same millisecond, where their first 8 digits are all alike', () => {
    const now = Date.now();
    const ids = Array.from({ length: 1000 }, () => uuidv7(now));
    expect(new Set(ids.map((id) => id.slice(0, 8))).size).toBe(1);
    const labels = shortIds(ids);
    expect(new Set(ids.map((id) => labels.get(id))).size).toBe(ids.length);
    for (const id of ids) expect(id.replace(/-/g, '').endsWith(labels.get(id)!.slice(1)), id).toBe(true);
  });

  it('should show the fewest digits that differ, never fewer than the minimum', () => {
    const a = '01a23329-0000-7000-8000-00000a123456';
    const b = '01a23329-0000-7000-8000-00000b123456';
    const c = '01a23329-0000-7000-8000-000000fedcba';
    expect(shortIds([c])).toEqual(new Map([[c, '…fedcba']]));
    expect(MIN_TAIL_DIGITS).toBe(6);
    expect(shortIds([a, b, c])).toEqual(
      new Map([
        [a, '…a123456'],
        [b, '…b123456'],
        [c, '…0fedcba'],
      ]),
    );
    expect(shortIds([a, a])).toEqual(new Map([[a, '…123456']]));
    expect(shortIds([])).toEqual(new Map());
  });
});
