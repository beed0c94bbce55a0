import { describe, expect, it } from 'vitest';
import { ms, progressLine, table } from './cli.format.js';

const counts = (pending: number, in_flight: number, succeeded: number, failed: number, cancelled = 0) => ({ pending, in_flight, succeeded, failed, cancelled });

describe('progressLine', () => {
  it.each([
    [counts(8, 0, 0, 0), 8, 0, '[..........] 0/8 done  (0 ok, 0 failed, 8 open)  0.0 s'],
    [counts(2, 2, 3, 1), 8, 1250, '[#####.....] 4/8 done  (3 ok, 1 failed, 4 open)  1.3 s'],
    [counts(0, 0, 7, 1), 8, 7000, '[##########] 8/8 done  (7 ok, 1 failed, 0 open)  7.0 s'],
    [counts(0, 0, 90, 5, 5), 100, 500, '[##########] 100/100 done  (90 ok, 5 failed, 5 cancelled, 0 open)  0.5 s'],
    [counts(99, 0, 1, 0), 100, 0, '[..........]   1/100 done  (1 ok, 0 failed, 99 open)  0.0 s'],
  ])('should draw %j of %s', (c, total, elapsed, line) => {
    expect(progressLine(c, total, elapsed, 10)).toBe(line);
  });
});

describe('table', () => {
  it('should align text left and numbers right under a header', () => {
    expect(
      table(
        ['name', 'n', 'p50'],
        [
          ['a', 1, ms(12.4)],
          ['long name', 100, ms(null)],
        ],
      ),
    ).toBe(['name         n    p50', '---------  ---  -----', 'a            1  12 ms', 'long name  100      -'].join('\n'));
  });
});
