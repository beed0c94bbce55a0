// The key's receivers: name, url, state; a row opens the receiver.
import { get } from './api.js';
import { h, mount, when } from './dom.js';

export async function receiversView(main, { current }) {
  const body = h('tbody');
  const more = h('button.secondary', { type: 'button', hidden: true }, 'More');
  let cursor;
  const load = async () => {
    const page = await get('/v1/receivers', { limit: 100, cursor });
    if (!current()) return;
    for (const r of page.items) body.append(receiverRow(r));
    cursor = page.nextCursor;
    more.hidden = !cursor;
    if (body.children.length === 0) {
      body.append(
        h(
          'tr',
          h('td.empty', { colspan: 5 }, 'No receivers yet. Create one with PUT /v1/receivers/{name} or `npx callbacks receivers put <name> --endpoint URL`.'),
        ),
      );
    }
  };
  more.addEventListener('click', load);
  await load();
  mount(
    main,
    h('h1', 'Receivers'),
    h('table#receivers.clickable', h('thead', h('tr', ...['Receiver', 'URL', 'State', 'Description', 'Updated'].map((t) => h('th', t)))), body),
    more,
  );
}

function receiverRow(r) {
  const href = `#/receiver/${encodeURIComponent(r.name)}`;
  return h(
    'tr',
    {
      'data-receiver': r.name,
      onclick: (event) => {
        if (!event.target.closest('a')) location.hash = href;
      },
    },
    h('td', h('a', { href }, r.name)),
    h('td.url', r.url ?? '–'),
    h('td', h('span', { class: `status ${r.disabled ? 'failed' : 'succeeded'}` }, r.disabled ? 'disabled' : 'enabled')),
    h('td', r.description ?? ''),
    h('td', when(r.updatedAt)),
  );
}
