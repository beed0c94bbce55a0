import { describe, expect, it } from 'vitest';
import { partitionName, partitionWidthMs, partitionsToDrop, partitionsToMake, type PartitionBounds } from './partition.policy.js';

const S = 1_000;
const M = 60 * S;
const H = 60 * M;
const at = (iso: string) => Date.parse(iso);

describe('partition policy', () => {
  it('should make a partition a tenth of the window wide, in whole seconds (10 s at least), and a day wide when history is kept forever', () => {
    expect(partitionWidthMs(720)).toBe(72 * H);
    expect(partitionWidthMs(0.05)).toBe(18 * S);
    expect(partitionWidthMs(0.0001)).toBe(10 * S);
    expect(partitionWidthMs(0)).toBe(24 * H);
  });

  it('should cover from a width ago to two minutes (or two widths) ahead, aligned, after what is covered already', () => {
    const now = at('2026-12-03T17:00:05Z');
    const w = 72 * H;
    const fresh = partitionsToMake([], now, w);
    expect(fresh[0].from).toBe(Math.floor((now - w) / w) * w); // on the grid of the width, from epoch
    expect(fresh[0].from).toBeLessThanOrEqual(now - w);
    fresh.forEach((p, i) => {
      expect(p.to - p.from).toBe(w);
      if (i > 0) expect(p.from).toBe(fresh[i - 1].to);
    });
    expect(fresh.at(-1)!.to).toBeGreaterThanOrEqual(now + 2 * w);
    expect(fresh.at(-2)!.to).toBeLessThan(now + 2 * w);
    const live: PartitionBounds = { name: 'callback_live', from: Infinity, to: null };
    const lastTo = Math.floor((now + M) / (18 * S)) * 18 * S; // a minute ahead, on the grid
    const last: PartitionBounds = { name: 'callback_20261203_165000', from: Math.floor((now - 18 * S) / (18 * S)) * 18 * S, to: lastTo };
    const made = partitionsToMake([live, last], now, 18 * S);
    expect(made[0]).toEqual({ from: lastTo, to: lastTo + 18 * S });
    expect(made.at(-1)!.to).toBeGreaterThanOrEqual(now + 2 * M);
    expect(made.at(-2)!.to).toBeLessThan(now + 2 * M);
    expect(partitionsToMake([live, { ...last, to: now + 3 * M }], now, 18 * S)).toEqual([]);
  });

  it("should go on from the migration's bound back onto the grid, after a long stop from a width ago, and fill a gap", () => {
    const now = at('2026-12-03T17:00:05Z');
    const w = 18 * S;
    const bound = at('2026-12-03T17:00:07Z');
    const before: PartitionBounds = { name: 'attempt_before', from: null, to: bound };
    expect(partitionsToMake([before], now, w)[0]).toEqual({ from: bound, to: (Math.floor(bound / w) + 1) * w });
    const old: PartitionBounds = { name: 'callback_20261101_000000', from: at('2026-11-01T00:00:00Z'), to: at('2026-11-04T00:00:00Z') };
    expect(partitionsToMake([old], now, 72 * H)[0].from).toBe(Math.floor((now - 72 * H) / (72 * H)) * 72 * H);
    // partitions made for a later instant (a clock that jumped, or a purge run as of then) leave no hole at now
    const grid = Math.floor(now / w) * w;
    const later: PartitionBounds = { name: 'later', from: grid + 10 * w, to: grid + 11 * w };
    const filled = partitionsToMake([later], now, w);
    expect(filled.some((p) => p.from <= now && now < p.to)).toBe(true);
    expect(filled.some((p) => p.from < later.to! && later.from! < p.to)).toBe(false);
  });

  it('should drop only partitions wholly before the cutoff, never the queue', () => {
    const parts: PartitionBounds[] = [
      { name: 'callback_live', from: Infinity, to: null },
      { name: 'attempt_before', from: null, to: 100 },
      { name: 'a', from: 100, to: 200 },
      { name: 'b', from: 200, to: 300 },
    ];
    expect(partitionsToDrop(parts, 200).map((p) => p.name)).toEqual(['attempt_before', 'a']);
    expect(partitionsToDrop(parts, 99)).toEqual([]);
  });

  it('should name a partition by its table and lower bound', () => {
    expect(partitionName('callback', at('2026-12-03T17:00:18Z'))).toBe('callback_20261203_170018');
  });
});
