// The key's events, newest first (GET /v1/events, paged), narrowed to one type with the
// select (its value kept in the page's address: #/events?type=order.paid); a row opens
// the event with its payload and deliveries (event.view.js).
import { get } from './api.js';
import { h, mount, when } from './dom.js';
import { idLink } from './id-link.js';
import { shortIds } from './ids.js';

/** An event's id is the sender's own (evt_1001) or a UUIDv7 made for it; only the made ones are shortened. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export async function eventsView(main, { query, current }) {
  const type = query.get('type') || undefined;
  const body = h('tbody');
  const more = h('button.secondary', { type: 'button', hidden: true }, 'More');
  const shown = [];
  let cursor;
  const load = async () => {
    /** @type {import('./api.js').Schemas['EventPageDto']} */
    const page = await get('/v1/events', { type, limit: 50, cursor });
    if (!current()) return;
    shown.push(...page.items.map((e) => e.id).filter((id) => UUID.test(id)));
    const labels = shortIds(shown);
    for (const e of page.items) body.append(eventRow(e, labels.get(e.id) ?? e.id));
    cursor = page.nextCursor;
    more.hidden = !cursor;
    if (body.children.length === 0) {
      const none = type ? `No events of type ${type}.` : 'No events yet. Publish one with POST /v1/events or `npx callbacks events send <type> payload.json`.';
      body.append(h('tr', h('td.empty', { colspan: 4 }, none)));
    }
  };
  more.addEventListener('click', load);
  /** @type {[import('./api.js').Schemas['EventTypePageDto'], void]} */
  const [types] = await Promise.all([get('/v1/event-types', { limit: 100 }), load()]);
  if (!current()) return;
  const names = types.items.map((t) => t.name);
  if (type && !names.includes(type)) names.unshift(type);
  const filter = h(
    'select',
    {
      name: 'type',
      onchange: (event) => {
        location.hash = event.target.value ? `#/events?type=${encodeURIComponent(event.target.value)}` : '#/events';
      },
    },
    h('option', { value: '' }, 'all types'),
    ...names.map((name) => h('option', { value: name, selected: name === type }, name)),
  );
  mount(
    main,
    h('h1', 'Events'),
    h('div.controls', h('label', 'type ', filter)),
    h('table#events.clickable', h('thead', h('tr', h('th', 'Event'), h('th', 'Type'), h('th.num', 'Deliveries'), h('th', 'Published'))), body),
    more,
  );
}

function eventRow(e, label) {
  const href = `#/event/${encodeURIComponent(e.id)}`;
  return h(
    'tr',
    {
      'data-event': e.id,
      onclick: (event) => {
        if (!event.target.closest('a, button')) location.hash = href;
      },
    },
    h('td', idLink({ id: e.id, href, label })),
    h('td', e.type),
    h('td.num', e.deliveries),
    h('td', when(e.createdAt)),
  );
}
