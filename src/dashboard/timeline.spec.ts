import { describe, expect, it } from 'vitest';
import {
  colourOf,
  formatMs,
  niceTicks,
  orderCalls,
  outcomeCounts,
  percentile,
  phaseSegments,
  phaseSummary,
  rowAt,
  rowHeight,
  visibleRows,
} from './assets/timeline.js';

const phases = (dnsMs: number | null, connectMs: number | null, tlsMs: number | null, firstByteMs: number | null) => ({ dnsMs, connectMs, tlsMs, firstByteMs });

describe('dashboard timeline', () => {
  it.each([
    [0, '0 ms'],
    [849.6, '850 ms'],
    [1250, '1.25 s'],
    [12_500, '12.5 s'],
    [150_000, '2.5 min'],
    [null, '–'],
    [Number.NaN, '–'],
  ])('should format %s ms as %s', (ms, text) => {
    expect(formatMs(ms)).toBe(text);
  });

  it.each([
    [7000, 10, [0, 1000, 2000, 3000, 4000, 5000, 6000, 7000]],
    [850, 4, [0, 500]],
    [1, 10, [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1]],
    [30_000, 5, [0, 10_000, 20_000, 30_000]],
  ])('should place nice ticks on a %s ms axis (at most %s steps)', (span, max, ticks) => {
    expect(niceTicks(span, max)).toEqual(ticks);
  });

  it.each([
    [
      'success',
      phases(1, 2, null, 10),
      15,
      [
        ['dns', 0, 1],
        ['connect', 1, 3],
        ['wait', 3, 10],
        ['receive', 10, 15],
      ],
    ],
    [
      'success',
      phases(0, 0, 5, 100),
      100,
      [
        ['tls', 0, 5],
        ['wait', 5, 100],
      ],
    ],
    [
      'timeout',
      phases(0, 1, null, null),
      500,
      [
        ['connect', 0, 1],
        ['wait', 1, 500],
      ],
    ],
    ['connect_error', phases(null, null, null, null), 3, [['wait', 0, 3]]],
    [
      'success',
      phases(4, 10, null, 2),
      8,
      [
        ['dns', 0, 4],
        ['connect', 4, 8],
      ],
    ],
  ])('should split a %s call into consecutive phases', (outcome, p, totalMs, expected) => {
    const segs = phaseSegments({ outcome, totalMs, phases: p }).map((s) => [s.name, s.fromMs, s.toMs]);
    expect(segs).toEqual(expected);
  });

  it('should colour known outcomes distinctly and unknown ones grey', () => {
    const known = ['success', 'http_error', 'timeout', 'connect_error', 'dns_error', 'tls_error', 'blocked'].map(colourOf);
    expect(new Set(known).size).toBe(known.length);
    expect(colourOf('something_new')).toBe(colourOf('toString'));
    expect(known).not.toContain(colourOf('something_new'));
  });

  it.each([
    [8, 22],
    [40, 22],
    [41, 12],
    [300, 12],
    [10_000, 4],
  ])('should give %s rows a height of %s px', (n, h) => {
    expect(rowHeight(n)).toBe(h);
  });

  it.each([
    [0, 100, 10, 1000, 0, 10],
    [95, 100, 10, 1000, 9, 20],
    [9990, 100, 10, 1000, 999, 1000],
    [0, 500, 22, 8, 0, 8],
  ])('should draw only visible rows (scrollTop %s, view %s, row %s, count %s)', (top, view, h, n, first, last) => {
    expect(visibleRows(top, view, h, n)).toEqual({ first, last });
  });

  it.each([
    [0, 0],
    [21.9, 0],
    [22, 1],
    [175, 7],
    [176, -1],
    [-1, -1],
  ])('should find the row under y=%s', (y, row) => {
    expect(rowAt(y, 22, 8)).toBe(row);
  });

  it.each([
    [50, 3],
    [90, 5],
    [99, 5],
    [0, 1],
    [100, 5],
  ])('should take the nearest-rank p%s', (p, v) => {
    expect(percentile([1, 2, 3, 4, 5], p)).toBe(v);
  });

  it('should summarise phases and outcomes over calls', () => {
    const calls = [
      { outcome: 'success', totalMs: 100, phases: phases(1, 2, null, 90) },
      { outcome: 'success', totalMs: 300, phases: phases(1, 4, null, 290) },
      { outcome: 'timeout', totalMs: 500, phases: phases(1, 2, null, null) },
    ];
    expect(phaseSummary(calls)).toEqual([
      { name: 'dns', count: 3, p50: 1, p90: 1 },
      { name: 'connect', count: 3, p50: 2, p90: 4 },
      { name: 'wait', count: 3, p50: 285, p90: 497 },
      { name: 'receive', count: 2, p50: 10, p90: 10 },
    ]);
    expect(outcomeCounts(calls)).toEqual([
      { outcome: 'success', count: 2 },
      { outcome: 'timeout', count: 1 },
    ]);
    expect(percentile([], 50)).toBeNull();
  });

  it('should list equal outcome counts in the colour table order, whatever order the calls ran in', () => {
    const of = (...outcomes: string[]) => outcomeCounts(outcomes.map((outcome) => ({ outcome }) as never));
    expect(of('timeout', 'http_error', 'success', 'success')).toEqual([
      { outcome: 'success', count: 2 },
      { outcome: 'http_error', count: 1 },
      { outcome: 'timeout', count: 1 },
    ]);
    expect(of('mystery', 'blocked')).toEqual([
      { outcome: 'blocked', count: 1 },
      { outcome: 'mystery', count: 1 },
    ]);
  });
});

describe('orderCalls', () => {
  const calls = [
    { id: 'a', startMs: 0, totalMs: 300, outcome: 'success' },
    { id: 'b', startMs: 5, totalMs: 700, outcome: 'timeout' },
    { id: 'c', startMs: 1, totalMs: 700, outcome: 'success' },
    { id: 'd', startMs: 2, totalMs: 10, outcome: 'http_error' },
  ];
  it.each([
    ['start', ['a', 'c', 'd', 'b']],
    ['slowest', ['c', 'b', 'a', 'd']],
    ['failed', ['d', 'b', 'a', 'c']],
    ['unknown', ['a', 'c', 'd', 'b']],
  ])('should order by %s without touching the input', (order, ids) => {
    expect(orderCalls(calls, order).map((c) => c.id)).toEqual(ids);
    expect(calls.map((c) => c.id)).toEqual(['a', 'b', 'c', 'd']);
  });
});
