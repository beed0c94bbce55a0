// One batch: summary, outcome legend, the waterfall of every call, the phase
// breakdown, and its failed callbacks.
import { get, send } from './api.js';
import { actionButton, flashMessage } from './actions.js';
import { h, mount, when } from './dom.js';
import { countBar } from './batches.view.js';
import { copyButton, idLink } from './id-link.js';
import { shortIds } from './ids.js';
import { colourOf, formatMs, orderCalls, ORDERS, outcomeCounts, PHASE_COLOURS, phaseSummary } from './timeline.js';
import { tooltip } from './tooltip.js';
import { waterfall } from './waterfall.js';

/** @typedef {import('./api.js').Schemas} Schemas */

const REFRESH_MS = 2000;

/** Renders the batch; while it is still running, renders it again every REFRESH_MS as long as it is on screen. */
export async function batchView(main, context) {
  const { id, current } = context;
  /** @type {[Schemas['BatchDto'], Schemas['SequenceDto'], Schemas['CallbackPageDto']]} */
  const [batch, timeline, failed] = await Promise.all([
    get(`/v1/batches/${id}`),
    get(`/v1/batches/${id}/sequence`, { format: 'json' }),
    get(`/v1/batches/${id}/callbacks`, { status: 'failed', limit: 100 }),
  ]);
  if (!current()) return;
  const open = (c) => {
    location.hash = `#/callback/${c.callbackId}`;
  };
  mount(
    main,
    h('p', h('a', { href: '#/' }, '← Batches')),
    flashMessage(),
    h('h1', `Batch ${batch.label ? `“${batch.label}” ` : ''}`, h('span.muted', batch.id), copyButton(batch.id)),
    summary(batch, timeline),
    h('h2', `Waterfall (${timeline.calls.length} calls)`),
    timeline.calls.length === 0 ? h('p.empty', 'No attempts yet: the calls have not been sent.') : [legend(timeline.calls), orderedWaterfall(timeline, open)],
    h('h2', 'Where the time went'),
    h('p', h('a', { href: `#/latency?batch=${id}&range=7d&bucket=1m` }, 'Latency over time of this batch')),
    phases(timeline.calls),
    h('h2', `Failed callbacks (${batch.counts.failed})`),
    batch.counts.failed > 0
      ? h(
          'div.controls',
          actionButton('Retry failed callbacks', {
            name: 'retry-batch',
            question: `Send this batch's ${batch.counts.failed} failed callback(s) again?`,
            run: async () => {
              const r = await send('POST', `/v1/batches/${id}/retry?status=failed`);
              return r.task ? `${r.retried} queued again so far; the rest follow in the background.` : `${r.retried} queued again.`;
            },
            after: () => batchView(main, context),
          }),
        )
      : null,
    failedTable(failed.items),
  );
  if (batch.status !== 'completed') {
    setTimeout(() => {
      if (current()) batchView(main, context).catch(() => undefined);
    }, REFRESH_MS);
  }
}

function summary(batch, timeline) {
  const item = (label, value) => h('div', h('span.muted', label), h('b', value));
  return h(
    'div.summary',
    item('status', h('span', { class: `status ${batch.status}` }, batch.status)),
    item('calls', String(batch.total)),
    item('succeeded', String(batch.counts.succeeded)),
    item('failed', String(batch.counts.failed)),
    item('open', String(batch.counts.pending + batch.counts.in_flight)),
    item('makespan', formatMs(batch.makespanMs)),
    item('first send', when(timeline.startedAt)),
    h('div', h('span.muted', 'progress'), countBar(batch.counts, batch.total)),
  );
}

/** The waterfall with a choice of row order; the time axis stays the batch's. */
function orderedWaterfall(timeline, open) {
  const slot = h('div');
  const draw = (order) => slot.replaceChildren(waterfall({ ...timeline, calls: orderCalls(timeline.calls, order) }, { tooltip, onOpen: open }));
  const select = h('select', { name: 'order', onchange: (e) => draw(e.target.value) }, ...ORDERS.map((o) => h('option', { value: o }, o)));
  draw(ORDERS[0]);
  return [h('div.controls', h('label', 'rows by ', select)), slot];
}

function legend(calls) {
  return h('div.legend', ...outcomeCounts(calls).map(({ outcome, count }) => h('span', { style: { '--swatch': colourOf(outcome) } }, `${outcome} ${count}`)));
}

function phases(calls) {
  const rows = phaseSummary(calls);
  if (rows.length === 0) return h('p.empty', 'No timings yet.');
  const legendRow = h('div.legend', ...rows.map((r) => h('span', { style: { '--swatch': PHASE_COLOURS[r.name] } }, r.name)));
  return [
    legendRow,
    h(
      'table#phases',
      h('thead', h('tr', h('th', 'phase'), h('th.num', 'calls'), h('th.num', 'median'), h('th.num', 'p90'))),
      h('tbody', ...rows.map((r) => h('tr', h('td', r.name), h('td.num', r.count), h('td.num', formatMs(r.p50)), h('td.num', formatMs(r.p90))))),
    ),
  ];
}

function failedTable(items) {
  if (items.length === 0) return h('p.empty', 'None.');
  const labels = shortIds(items.map((c) => c.id));
  return h(
    'table#failed',
    h('thead', h('tr', h('th', 'callback'), h('th', 'url'), h('th.num', 'attempts'), h('th.num', 'last code'), h('th', 'last error'))),
    h(
      'tbody',
      ...items.map((c) =>
        h(
          'tr',
          { 'data-callback': c.id },
          h('td', idLink({ id: c.id, href: `#/callback/${c.id}`, label: labels.get(c.id), externalId: c.externalId })),
          h('td.url', c.url),
          h('td.num', c.attemptCount),
          h('td.num', c.lastStatusCode ?? '–'),
          h('td', c.lastError ?? ''),
        ),
      ),
    ),
  );
}
