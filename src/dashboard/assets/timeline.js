// Pure helpers of the dashboard's charts: no DOM, so they are unit-tested in Node
// (src/dashboard/timeline.spec.ts) and imported by the browser as they are.

/** Bar colour per attempt outcome; anything unknown is grey. */
export const OUTCOME_COLOURS = {
  success: '#2f9e44',
  http_error: '#f08c00',
  timeout: '#e03131',
  connect_error: '#9c36b5',
  dns_error: '#6741d9',
  tls_error: '#c2255c',
  blocked: '#495057',
};
export const OTHER_COLOUR = '#868e96';

export function colourOf(outcome) {
  return Object.hasOwn(OUTCOME_COLOURS, outcome) ? OUTCOME_COLOURS[outcome] : OTHER_COLOUR;
}

/** "0 ms", "850 ms", "1.25 s", "12.5 s", "2.0 min"; "–" for null. */
export function formatMs(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 10_000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

/** Tick positions (ms) on an axis of `spanMs`: steps of 1, 2 or 5 × 10^k, at most `maxTicks` + 1 ticks. */
export function niceTicks(spanMs, maxTicks = 10) {
  const span = Math.max(spanMs, 1);
  const raw = span / Math.max(1, maxTicks);
  const pow = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * pow).find((s) => s >= raw);
  const ticks = [];
  for (let t = 0; t <= span + 1e-9; t += step) ticks.push(Math.round(t * 1000) / 1000);
  return ticks;
}

/**
 * Where one call's time went, as consecutive segments from its start (ms):
 * dns, connect, tls (each a duration), wait (until the first response byte) and
 * receive (the rest). A call without a response (timeout, refused) waits to its end.
 */
export function phaseSegments(call) {
  const p = call.phases ?? {};
  const total = Math.max(0, call.totalMs);
  const segments = [];
  let at = 0;
  for (const [name, ms] of [
    ['dns', p.dnsMs],
    ['connect', p.connectMs],
    ['tls', p.tlsMs],
  ]) {
    if (ms === null || ms === undefined || ms <= 0) continue;
    const to = Math.min(total, at + ms);
    segments.push({ name, fromMs: at, toMs: to });
    at = to;
  }
  const firstByte = p.firstByteMs === null || p.firstByteMs === undefined ? total : Math.min(total, Math.max(at, p.firstByteMs));
  if (firstByte > at) segments.push({ name: 'wait', fromMs: at, toMs: firstByte });
  if (total > firstByte) segments.push({ name: 'receive', fromMs: firstByte, toMs: total });
  return segments;
}

/** Row height (px) for a waterfall of `count` rows: roomy for a few calls, dense for thousands. */
export function rowHeight(count) {
  if (count <= 40) return 22;
  if (count <= 300) return 12;
  return 4;
}

/** Rows [first, last) that intersect a viewport of `viewHeight` px scrolled by `scrollTop`. */
export function visibleRows(scrollTop, viewHeight, rowH, count) {
  const first = Math.max(0, Math.floor(scrollTop / rowH));
  const last = Math.min(count, Math.ceil((scrollTop + viewHeight) / rowH));
  return { first, last: Math.max(first, last) };
}

/** The row under a y offset inside the scrolled content, or -1. */
export function rowAt(y, rowH, count) {
  const row = Math.floor(y / rowH);
  return y >= 0 && row < count ? row : -1;
}

/** Nearest-rank percentile of an ascending array (p in 0..100); null when empty. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/** Per phase: how many calls had it and the median and p90 of its duration (ms). */
export function phaseSummary(calls) {
  const byPhase = new Map();
  for (const call of calls) {
    for (const s of phaseSegments(call)) {
      if (!byPhase.has(s.name)) byPhase.set(s.name, []);
      byPhase.get(s.name).push(s.toMs - s.fromMs);
    }
  }
  const order = ['dns', 'connect', 'tls', 'wait', 'receive'];
  return order
    .filter((n) => byPhase.has(n))
    .map((name) => {
      const values = byPhase.get(name).sort((a, b) => a - b);
      return { name, count: values.length, p50: percentile(values, 50), p90: percentile(values, 90) };
    });
}

/** Counts of calls per outcome, most frequent first. */
export function outcomeCounts(calls) {
  const counts = new Map();
  for (const c of calls) counts.set(c.outcome, (counts.get(c.outcome) ?? 0) + 1);
  // Most first; equal counts in the colour table's order (success, http_error, timeout, …),
  // not in whichever order the calls happened to be sent.
  const rank = (outcome) => {
    const i = Object.keys(OUTCOME_COLOURS).indexOf(outcome);
    return i === -1 ? Infinity : i;
  };
  return [...counts].sort((a, b) => b[1] - a[1] || rank(a[0]) - rank(b[0])).map(([outcome, count]) => ({ outcome, count }));
}

/** Colours of the phases in tooltips and the phase breakdown. */
export const PHASE_COLOURS = { dns: '#74c0fc', connect: '#ffa94d', tls: '#da77f2', wait: '#69db7c', receive: '#4263eb' };

/** The waterfall's row orders: by start (the batch as it ran), slowest first, or failures first. */
export const ORDERS = ['start', 'slowest', 'failed'];

export function orderCalls(calls, order) {
  const byStart = (a, b) => a.startMs - b.startMs;
  const sorted = calls.slice();
  if (order === 'slowest') return sorted.sort((a, b) => b.totalMs - a.totalMs || byStart(a, b));
  if (order === 'failed') return sorted.sort((a, b) => (a.outcome === 'success') - (b.outcome === 'success') || byStart(a, b));
  return sorted.sort(byStart);
}
