// Latency over time per host (p50/p90/p99 per bucket) from GET /v1/history/latency.
import { ApiError, get } from './api.js';
import { h, mount, svg } from './dom.js';
import { idLink } from './id-link.js';
import { shortIds } from './ids.js';
import { formatMs, niceTicks } from './timeline.js';

const RANGES = { '1h': 3_600_000, '6h': 21_600_000, '24h': 86_400_000, '7d': 604_800_000 };
const BUCKETS = ['1m', '5m', '15m', '1h', '1d'];
const SERIES = ['p50', 'p90', 'p99'];

export async function latencyView(main, { query, current }) {
  const host = query.get('host') ?? '';
  const range = RANGES[query.get('range')] ? query.get('range') : '1h';
  const bucket = BUCKETS.includes(query.get('bucket')) ? query.get('bucket') : '1m';
  const batch = query.get('batch') ?? '';
  const [hosts, history] = await Promise.all([knownHosts(), latency(host, range, bucket, batch)]);
  if (!current()) return;
  const title = batch
    ? ['Latency over time of batch ', idLink({ id: batch, href: `#/batch/${batch}`, label: shortIds([batch]).get(batch) })]
    : 'Latency over time';
  mount(
    main,
    h('h1', title),
    controls(hosts, host, range, bucket, batch),
    history.error
      ? h('p.empty', history.error)
      : history.items.length === 0
        ? h('p.empty', 'No calls in this range yet.')
        : [latencyChart(history.items), table(history.items)],
  );
}

/** @returns {Promise<import('./api.js').Schemas['LatencyHistoryDto'] | { error: string }>} */
async function latency(host, range, bucket, batch) {
  const to = new Date();
  const from = new Date(to.getTime() - RANGES[range]);
  try {
    return await get('/v1/history/latency', { host, batch, bucket, from: from.toISOString(), to: to.toISOString() });
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return { error: 'The latency history API is not available on this service yet.' };
    if (error instanceof ApiError && error.status === 400) return { error: error.message };
    throw error;
  }
}

/** Destinations for the picker, from GET /v1/hosts when the service has it. */
async function knownHosts() {
  try {
    /** @type {import('./api.js').Schemas['HostPageDto']} */
    const page = await get('/v1/hosts', { limit: 1000 }); // the first 1,000 for the picker; any host can be typed
    return page.items.map((x) => x.host);
  } catch {
    return [];
  }
}

function controls(hosts, host, range, bucket, batch) {
  const hostInput = h('input', { name: 'host', list: 'hosts', value: host, placeholder: 'all hosts (e.g. https://example.com:443)', size: 36 });
  const pick = (name, options, value) => h('select', { name }, ...options.map((o) => h('option', { value: o, selected: o === value }, o)));
  const rangeSel = pick('range', Object.keys(RANGES), range);
  const bucketSel = pick('bucket', BUCKETS, bucket);
  return h(
    'form.controls',
    {
      onsubmit: (event) => {
        event.preventDefault();
        const q = new URLSearchParams({ host: hostInput.value.trim(), range: rangeSel.value, bucket: bucketSel.value });
        if (batch) q.set('batch', batch);
        location.hash = `#/latency?${q}`;
      },
    },
    h('label', 'host ', hostInput),
    h('datalist#hosts', ...hosts.map((x) => h('option', { value: x }))),
    h('label', 'last ', rangeSel),
    h('label', 'bucket ', bucketSel),
    h('button', { type: 'submit' }, 'Show'),
  );
}

/** p50/p90/p99 lines of history buckets, with their legend (also on a receiver's page). */
export function latencyChart(items) {
  const W = 1000;
  const H = 280;
  const L = 60;
  const B = 30;
  const T = 12;
  const R = 12;
  const t0 = Date.parse(items[0].start);
  const t1 = Math.max(Date.parse(items[items.length - 1].start), t0 + 1);
  const maxY = Math.max(1, ...items.flatMap((i) => SERIES.map((s) => i[s] ?? 0)));
  const x = (iso) => L + ((Date.parse(iso) - t0) / (t1 - t0)) * (W - L - R);
  const y = (ms) => H - B - (ms / maxY) * (H - B - T);
  const root = svg('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'latency percentiles over time' });
  for (const tick of niceTicks(maxY, 5)) {
    root.append(svg('line', { class: 'grid', x1: L, x2: W - R, y1: y(tick), y2: y(tick) }));
    const label = svg('text', { x: L - 6, y: y(tick) + 4, 'text-anchor': 'end' });
    label.textContent = formatMs(tick);
    root.append(label);
  }
  for (const [i, item] of [items[0], items[items.length - 1]].entries()) {
    const label = svg('text', { x: x(item.start), y: H - 10, 'text-anchor': i === 0 ? 'start' : 'end' });
    label.textContent = new Date(item.start).toLocaleTimeString();
    root.append(label);
  }
  for (const s of SERIES) {
    const points = items.filter((i) => i[s] !== null && i[s] !== undefined);
    const d = points.map((p, i) => `${i === 0 ? 'M' : 'L'}${x(p.start).toFixed(1)},${y(p[s]).toFixed(1)}`).join(' ');
    root.append(svg('path', { class: s, d: points.length === 1 ? `${d} h2` : d }));
  }
  const legend = h(
    'div.legend',
    ...[
      ['p50', '#2f9e44'],
      ['p90', '#f08c00'],
      ['p99', '#e03131'],
    ].map(([s, c]) => h('span', { style: { '--swatch': c } }, s)),
  );
  return [legend, root];
}

function table(items) {
  return h(
    'table#latency',
    h('thead', h('tr', ...['bucket start', 'calls', 'ok', 'failed', 'p50', 'p90', 'p99', 'max'].map((t, i) => h(i ? 'th.num' : 'th', t)))),
    h(
      'tbody',
      ...items
        .slice()
        .reverse()
        .map((i) =>
          h(
            'tr',
            h('td', new Date(i.start).toLocaleString()),
            h('td.num', i.count),
            h('td.num', i.ok),
            h('td.num', i.failed),
            ...['p50', 'p90', 'p99', 'max'].map((s) => h('td.num', formatMs(i[s]))),
          ),
        ),
    ),
  );
}
