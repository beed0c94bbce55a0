// A receiver's event subscriptions, on its page: the types it takes (names link to their
// events; `prefix.*` takes every type under the prefix) and its filter on payloads.
// Shown as the receiver has them (GET /v1/receivers/{name}); they change with
// PUT /v1/receivers/{name} `{eventTypes, filter}`, as the page's other settings do.
import { h } from './dom.js';

/** @param {import('./api.js').Schemas['ReceiverDto']} r */
export function subscriptionsPanel(r) {
  const types = r.eventTypes.length
    ? h(
        'ul.types',
        ...r.eventTypes.map((t) =>
          h(
            'li',
            { 'data-event-type': t },
            t.endsWith('.*') ? h('code', { title: `every type under ${t.slice(0, -2)}.` }, t) : h('a', { href: `#/events?type=${encodeURIComponent(t)}` }, t),
          ),
        ),
      )
    : h('span.muted', 'none: takes no events (callbacks that name it still reach it)');
  const filter = r.filter ? h('pre#subscription-filter.payload', JSON.stringify(r.filter, null, 2)) : h('span.muted', 'none: every event of its types');
  return h('table#subscriptions', h('tbody', h('tr', h('th', 'event types'), h('td', types)), h('tr', h('th', 'filter'), h('td', filter))));
}
