// The receiver's deliveries: filters (status, window, event type), the list newest
// first, "Replay all failed since…" (a recovery, followed to the end), and one
// delivery with each attempt's request as sent, response and phases.
import { actionButton, confirmAction, flashMessage, flashNext } from './actions.js';
import { h, mount, when } from './dom.js';
import { shortIds } from './ids.js';
import { portalGet, portalSend } from './portal.api.js';
import { formatMs } from './timeline.js';

const STATUSES = ['', 'pending', 'in_flight', 'succeeded', 'failed', 'cancelled'];
const WINDOWS = [
  ['', 'any time'],
  ['1h', 'last hour'],
  ['24h', 'last 24 hours'],
  ['7d', 'last 7 days'],
];
const WINDOW_MS = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 };
/** The filters, kept in memory for the tab's life. */
const filters = { status: '', window: '', eventType: '' };

export async function deliveriesSection({ session, current, rerender }) {
  const since = filters.window ? new Date(Date.now() - WINDOW_MS[filters.window]).toISOString() : undefined;
  const page = await portalGet('/portal/api/deliveries', { status: filters.status, since, eventType: filters.eventType, limit: 50 });
  if (!current()) return [];
  const select = (name, options) => {
    const el = h(
      `select#filter-${name}`,
      { 'aria-label': name },
      ...options.map(([value, label]) => h('option', { value, selected: filters[name] === value }, label)),
    );
    el.addEventListener('change', () => {
      filters[name] = el.value;
      void rerender();
    });
    return el;
  };
  const eventType = h('input#filter-eventType', { type: 'text', placeholder: 'event type', value: filters.eventType, size: 16 });
  eventType.addEventListener('change', () => {
    filters.eventType = eventType.value.trim();
    void rerender();
  });
  return [
    h('h2', 'Deliveries'),
    h(
      'div.controls.filters',
      select(
        'status',
        STATUSES.map((s) => [s, s || 'any status']),
      ),
      select('window', WINDOWS),
      eventType,
    ),
    session.capabilities.includes('replay') ? replayFailedPanel(rerender) : null,
    table(page.items, session.capabilities.includes('replay'), rerender),
    page.nextCursor ? h('p.muted', 'Showing the newest 50; narrow the filters to see older ones.') : null,
  ];
}

function table(items, replayable, rerender) {
  if (items.length === 0) return h('p.empty', 'No deliveries.');
  const labels = shortIds(items.map((c) => c.id));
  return h(
    'table#deliveries',
    h('thead', h('tr', h('th', 'delivery'), h('th', 'accepted'), h('th', 'status'), h('th.num', 'attempts'), h('th', 'last code / error'), h('th', ''))),
    h(
      'tbody',
      ...items.map((c) =>
        h(
          'tr',
          { 'data-delivery': c.id },
          h('td', h('a', { href: `#/delivery/${c.id}`, title: c.id }, c.externalId ?? labels.get(c.id))),
          h('td', when(c.createdAt)),
          h('td', h('span', { class: `status ${c.status}` }, c.waiting ? 'held' : c.status)),
          h('td.num', c.attemptCount),
          h('td', c.lastStatusCode ?? c.lastError ?? ''),
          h('td', replayable && (c.status === 'failed' || c.status === 'cancelled') ? replayButton(c.id, rerender) : null),
        ),
      ),
    ),
  );
}

function replayButton(id, after) {
  return actionButton('Replay', {
    name: 'replay',
    question: 'Send this delivery again?',
    run: async () => {
      await portalSend('POST', `/portal/api/deliveries/${id}/replay`);
      return 'Sent again.';
    },
    after,
  });
}

/** "Replay all failed since…": a recovery of this receiver's failed deliveries, followed until everything it sent settled. */
function replayFailedPanel(rerender) {
  const windowSelect = h('select#replay-window', { 'aria-label': 'replay window' }, ...WINDOWS.slice(1).map(([v, l]) => h('option', { value: v }, l)));
  const progress = h('span#replay-progress.muted');
  const button = h('button.secondary', { type: 'button', 'data-action': 'replay-failed' }, 'Replay all failed since…');
  button.addEventListener('click', async () => {
    const since = new Date(Date.now() - WINDOW_MS[windowSelect.value]).toISOString();
    if (!(await confirmAction(`Send again every failed delivery accepted since ${when(since)}?`, 'Replay'))) return;
    button.disabled = true;
    try {
      let r = await portalSend('POST', '/portal/api/replays', { since });
      // Bounded: a replay of thousands settles within minutes; the page stops following after 10.
      for (const until = Date.now() + 600_000; Date.now() < until;) {
        progress.textContent = `${r.requeued} of ${r.matched} sent again: ${r.delivered} delivered, ${r.failed} failed, ${r.pending} pending`;
        if (r.state !== 'running' && r.pending === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 500));
        r = await portalGet(`/portal/api/replays/${r.id}`);
      }
      flashNext(`Replayed ${r.requeued} failed deliveries: ${r.delivered} delivered, ${r.failed} failed again, ${r.pending} pending.`);
      await rerender();
    } catch (error) {
      progress.textContent = error.message;
      progress.className = 'error';
    } finally {
      button.disabled = false;
    }
  });
  return h('div.controls', windowSelect, button, progress);
}

export async function deliveryView(main, { session, id, current }) {
  const d = await portalGet(`/portal/api/deliveries/${id}`);
  if (!current()) return;
  const replayable = session.capabilities.includes('replay') && (d.status === 'failed' || d.status === 'cancelled');
  mount(
    main,
    h('p', h('a', { href: '#/' }, '← Deliveries')),
    flashMessage(),
    h('h1', 'Delivery ', h('span.muted', d.externalId ?? d.id)),
    h('p', h('span', { class: `status ${d.status}` }, d.status), ` · ${d.method} ${d.url} · accepted ${when(d.createdAt)}`),
    replayable ? replayButton(d.id, () => deliveryView(main, { session, id, current })) : null,
    h('h2', `Attempts (${d.attempts.length})`),
    d.attempts.length === 0 ? h('p.empty', 'Not sent yet.') : d.attempts.map(attempt),
  );
}

function attempt(a) {
  const phases = [
    ['dns', a.phases.dnsMs],
    ['connect', a.phases.connectMs],
    ['tls', a.phases.tlsMs],
    ['first byte', a.phases.firstByteMs],
    ['total', a.durationMs],
  ].filter(([, v]) => v !== null && v !== undefined);
  const headerLines = (headers) =>
    Object.entries(headers ?? {})
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n');
  return h(
    'section.attempt',
    { 'data-attempt': a.number },
    h(
      'h3',
      `#${a.number} · ${when(a.startedAt)} · `,
      h('span', { class: `status ${a.outcome === 'success' ? 'succeeded' : 'failed'}` }, a.statusCode ?? a.outcome),
    ),
    a.error ? h('p.error', a.error) : null,
    h('p.phases', phases.map(([k, v]) => `${k} ${formatMs(v)}`).join(' · ')),
    h('h4', 'Request'),
    h('pre.request', `${a.request.method} ${a.request.url}\n${headerLines(a.request.headers)}\n\n${a.request.body ?? ''}`),
    h('h4', 'Response'),
    h('pre.response', `${a.statusCode ?? '(no response)'}\n${headerLines(a.responseHeaders)}\n\n${a.responseBody ?? ''}`),
  );
}
