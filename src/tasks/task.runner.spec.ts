import { describe, expect, it } from 'vitest';
import { CHUNK_SIZES } from './task.sql.js';
import { CHUNK_TARGET_MS, ChunkSizer } from './task.runner.js';

describe(ChunkSizer.name, () => {
  it('should start at 200 rows', () => {
    expect(new ChunkSizer().size).toBe(200);
  });

  it('should grow one size per fast chunk, up to the largest', () => {
    const sizer = new ChunkSizer();
    const seen: number[] = [];
    for (let i = 0; i < 5; i++) {
      sizer.took(1);
      seen.push(sizer.size);
    }
    expect(seen).toEqual([400, 800, 800, 800, 800]);
  });

  it('should shrink at once to the size whose time fits the target', () => {
    const sizer = new ChunkSizer();
    sizer.took(200); // 200 rows in 200 ms: 1 ms a row, so 25 rows (25 ms) fit in 40 ms
    expect(sizer.size).toBe(25);
    sizer.took(60); // slower still: never below the smallest
    expect(sizer.size).toBe(CHUNK_SIZES[0]);
  });

  it('should settle where a chunk takes about the target', () => {
    const sizer = new ChunkSizer();
    const msPerRow = 0.15; // 400 rows: 60 ms, 200 rows: 30 ms
    for (let i = 0; i < 20; i++) sizer.took(sizer.size * msPerRow);
    expect(sizer.size).toBe(200);
    expect(sizer.size * msPerRow).toBeLessThanOrEqual(CHUNK_TARGET_MS);
  });
});
