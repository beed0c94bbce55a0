// The key's receivers with their health: state (failing, disabled or ok), failing since
// when, success rate over the last hour, pending and held counts (all from one
// GET /v1/receivers page), by name or by health (failing first, the longest failing
// first); a row opens the receiver.
import { get } from './api.js';
import { h, mount, when } from './dom.js';

/** The list's orders (GET /v1/receivers?sort=), kept in the page's address: #/receivers?sort=health. */
const SORTS = { name: 'name', health: 'health (failing first)' };

export async function receiversView(main, { query, current }) {
  const sort = Object.hasOwn(SORTS, query.get('sort') ?? '') ? query.get('sort') : 'name';
  const body = h('tbody');
  const more = h('button.secondary', { type: 'button', hidden: true }, 'More');
  let cursor;
  const load = async () => {
    /** @type {import('./api.js').Schemas['ReceiverPageDto']} */
    const page = await get('/v1/receivers', { limit: 100, cursor, sort });
    if (!current()) return;
    for (const r of page.items) body.append(receiverRow(r));
    cursor = page.nextCursor;
    more.hidden = !cursor;
    if (body.children.length === 0) {
      body.append(
        h(
          'tr',
          h('td.empty', { colspan: 8 }, 'No receivers yet. Create one with PUT /v1/receivers/{name} or `npx callbacks receivers put <name> --endpoint URL`.'),
        ),
      );
    }
  };
  more.addEventListener('click', load);
  await load();
  const order = h(
    'select',
    {
      name: 'sort',
      onchange: (event) => {
        location.hash = `#/receivers?sort=${event.target.value}`;
      },
    },
    ...Object.entries(SORTS).map(([value, label]) => h('option', { value, selected: value === sort }, label)),
  );
  const headings = ['Receiver', 'URL', 'State', 'Failing since', 'Success, last hour', 'Pending', 'Held', 'Description'];
  const numeric = ['Success, last hour', 'Pending', 'Held'];
  mount(
    main,
    h('h1', 'Receivers'),
    h('div.controls', h('label', 'sort by ', order)),
    h('table#receivers.clickable', h('thead', h('tr', ...headings.map((t) => h(numeric.includes(t) ? 'th.num' : 'th', t)))), body),
    more,
  );
}

/** failing (its latest attempts all failed), disabled (held), or ok. */
function stateOf(r) {
  if (r.disabled) return { state: 'disabled', css: 'cancelled' };
  if (r.failingSince) return { state: 'failing', css: 'failed' };
  return { state: 'ok', css: 'succeeded' };
}

/** "67.5% of 40", or – with no attempt in the hour. */
function successRate(health) {
  if (health.successRate === null) return h('span.muted', { title: 'no attempt in the last hour' }, '–');
  const percent = Math.round(health.successRate * 1000) / 10;
  return h(
    'span',
    { title: `${health.successes} of ${health.attempts} attempts succeeded since ${when(health.since)}` },
    `${percent}%`,
    h('span.muted', ` of ${health.attempts}`),
  );
}

function receiverRow(r) {
  const href = `#/receiver/${encodeURIComponent(r.name)}`;
  const { state, css } = stateOf(r);
  const lastSuccess = r.health.lastSuccessAt ? `last success ${when(r.health.lastSuccessAt)}` : 'no success recorded';
  return h(
    'tr',
    {
      'data-receiver': r.name,
      'data-state': state,
      onclick: (event) => {
        if (!event.target.closest('a')) location.hash = href;
      },
    },
    h('td', h('a', { href }, r.name)),
    h('td.url', r.url ?? '–'),
    h('td', h('span', { class: `status ${css}`, title: r.disabledReason ?? lastSuccess }, state)),
    h('td', { title: lastSuccess }, r.failingSince ? when(r.failingSince) : '–'),
    h('td.num', successRate(r.health)),
    h('td.num', r.health.pending),
    h('td.num', r.health.held),
    h('td', r.description ?? ''),
  );
}
