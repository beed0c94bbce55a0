// One event: its type, payload and fan-out, each delivery's receiver, status, attempts
// and last error (GET /v1/events/{id}: the first 1,000; its batch pages through all),
// each linking to its callback and its receiver.
import { get } from './api.js';
import { h, mount, when } from './dom.js';
import { copyButton, idLink } from './id-link.js';
import { shortIds } from './ids.js';

export async function eventView(main, { id, current }) {
  const eventId = decodeURIComponent(id);
  /** @type {import('./api.js').Schemas['EventDetailDto']} */
  const e = await get(`/v1/events/${encodeURIComponent(eventId)}`);
  if (!current()) return;
  const typeHref = `#/events?type=${encodeURIComponent(e.type)}`;
  mount(
    main,
    h('p', h('a', { href: '#/events' }, '← Events')),
    h('h1', 'Event ', h('span.muted', e.id), copyButton(e.id)),
    h(
      'table#event',
      h(
        'tbody',
        ...[
          ['type', h('a', { href: typeHref }, e.type)],
          ['deliveries', String(e.deliveries)],
          ['batch', h('a', { href: `#/batch/${e.batchId}` }, e.batchId)],
          ['published', when(e.createdAt)],
        ].map(([k, v]) => h('tr', h('th', k), h('td', v))),
      ),
    ),
    h('h2', 'Payload'),
    h('pre#payload.payload', JSON.stringify(e.payload, null, 2)),
    h('h2', `Deliveries (${e.deliveries})`),
    e.callbacks.length < e.deliveries ? h('p.muted', `The first ${e.callbacks.length} shown; the batch has all ${e.deliveries}.`) : null,
    deliveriesTable(e.callbacks),
  );
}

/** held: pending while its receiver is disabled. */
function statusOf(d) {
  return d.held
    ? h('span.status.cancelled', { title: 'its receiver is disabled: sent once it is enabled' }, 'held')
    : h('span', { class: `status ${d.status}` }, d.status);
}

function deliveriesTable(items) {
  if (items.length === 0) return h('p.empty', 'No receiver took this event: none is subscribed to its type, or their filters left it out.');
  const labels = shortIds(items.map((d) => d.callbackId));
  return h(
    'table#deliveries',
    h('thead', h('tr', h('th', 'callback'), h('th', 'receiver'), h('th', 'status'), h('th.num', 'attempts'), h('th.num', 'last code'), h('th', 'last error'))),
    h(
      'tbody',
      ...items.map((d) =>
        h(
          'tr',
          { 'data-callback': d.callbackId, 'data-receiver': d.receiver ?? '' },
          h('td', idLink({ id: d.callbackId, href: `#/callback/${d.callbackId}`, label: labels.get(d.callbackId) })),
          h('td', d.receiver ? h('a', { href: `#/receiver/${encodeURIComponent(d.receiver)}` }, d.receiver) : h('span.muted', '– (deleted)')),
          h('td', statusOf(d)),
          h('td.num', d.attempts),
          h('td.num', d.lastStatusCode ?? '–'),
          h('td', d.lastError ?? ''),
        ),
      ),
    ),
  );
}
