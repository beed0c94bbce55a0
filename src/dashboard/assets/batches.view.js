// The batches list: status, counts as a stacked bar, makespan (fetched per row).
import { get } from './api.js';
import { h, mount, when } from './dom.js';
import { idLink } from './id-link.js';
import { shortIds } from './ids.js';
import { formatMs } from './timeline.js';

const COUNT_COLOURS = { succeeded: '#2f9e44', failed: '#e03131', cancelled: '#868e96', in_flight: '#1c7ed6', pending: '#ced4da' };

export function countBar(counts, total) {
  const bar = h('div.countbar', {
    title: Object.entries(counts)
      .map(([k, v]) => `${k}: ${v}`)
      .join(', '),
  });
  for (const [status, colour] of Object.entries(COUNT_COLOURS)) {
    const n = counts[status] ?? 0;
    if (n > 0) bar.append(h('span', { style: { width: `${(100 * n) / Math.max(total, 1)}%`, background: colour } }));
  }
  return bar;
}

export async function batchesView(main, { current }) {
  const body = h('tbody');
  const more = h('button.secondary', { type: 'button', hidden: true }, 'More');
  let cursor;
  const shown = [];
  const load = async () => {
    /** @type {import('./api.js').Schemas['BatchPageDto']} */
    const page = await get('/v1/batches', { limit: 50, cursor });
    if (!current()) return;
    // Tails that differ among every batch listed so far (the first 8 digits of ids made within a minute are alike).
    shown.push(...page.items.map((b) => b.id));
    const labels = shortIds(shown);
    for (const b of page.items) body.append(batchRow(b, labels.get(b.id)));
    cursor = page.nextCursor;
    more.hidden = !cursor;
    if (body.children.length === 0)
      body.append(h('tr', h('td.empty', { colspan: 7 }, 'No batches yet. Send one with POST /v1/batches or `npx callbacks send batch.json`.')));
  };
  more.addEventListener('click', load);
  await load();
  mount(
    main,
    h('h1', 'Batches'),
    h(
      'table#batches.clickable',
      h(
        'thead',
        h(
          'tr',
          ...['Batch', 'Label', 'Status', 'Calls', 'Outcome', 'Makespan', 'Created'].map((t) => h(['Calls', 'Makespan'].includes(t) ? 'th.num' : 'th', t)),
        ),
      ),
      body,
    ),
    more,
  );
}

function batchRow(b, label) {
  const makespan = h('td.num', '…');
  get(`/v1/batches/${b.id}`).then(
    (full) => {
      makespan.textContent = formatMs(full.makespanMs);
    },
    () => {
      makespan.textContent = '–';
    },
  );
  // The whole row opens the batch (its id link stays, for keyboards and new tabs).
  const href = `#/batch/${b.id}`;
  return h(
    'tr',
    {
      'data-batch': b.id,
      onclick: (event) => {
        if (!event.target.closest('a')) location.hash = href;
      },
    },
    h('td', idLink({ id: b.id, href, label })),
    h('td', b.label ?? ''),
    h('td', h('span', { class: `status ${b.status}` }, b.status)),
    h('td.num', b.total),
    h(
      'td',
      countBar(b.counts, b.total),
      h('span.muted', `${b.counts.succeeded} ok · ${b.counts.failed} failed · ${b.counts.pending + b.counts.in_flight} open`),
    ),
    makespan,
    h('td', when(b.createdAt)),
  );
}
