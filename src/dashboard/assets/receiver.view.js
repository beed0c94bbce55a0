// One receiver: settings, event subscriptions (subscriptions.panel.js), authentication and
// "Send a test" (credentials.panel.js), its transform with "Try it" (transform.panel.js),
// secrets (masked, with a reveal button), figures, latency over the last hour, its held and failed
// callbacks (with "Replay failed since…": recovery.panel.js), and disable / enable.
import { get, send } from './api.js';
import { actionButton, flashMessage } from './actions.js';
import { h, mount, when } from './dom.js';
import { idLink } from './id-link.js';
import { shortIds } from './ids.js';
import { latencyChart } from './latency.view.js';
import { credentialsPanel } from './credentials.panel.js';
import { portalPanel } from './portal.panel.js';
import { recoveryPanel } from './recovery.panel.js';
import { subscriptionsPanel } from './subscriptions.panel.js';
import { transformPanel } from './transform.panel.js';
import { formatMs } from './timeline.js';

export async function receiverView(main, context) {
  const { id, current } = context;
  const name = decodeURIComponent(id);
  const path = `/v1/receivers/${encodeURIComponent(name)}`;
  const to = new Date();
  const from = new Date(to.getTime() - 3_600_000);
  const [r, history, waiting, failed] = await Promise.all([
    get(path),
    get('/v1/history/latency', { receiver: name, bucket: '1m', from: from.toISOString(), to: to.toISOString() }),
    get('/v1/callbacks', { receiver: name, status: 'pending', limit: 100 }),
    get('/v1/callbacks', { receiver: name, status: 'failed', limit: 100 }),
  ]);
  if (!current()) return;
  const rerender = () => receiverView(main, context);
  const toggle = r.disabled
    ? actionButton('Enable', {
        name: 'enable',
        question: `Enable ${r.name}? Its ${r.figures.held} held callback(s) will be sent.`,
        run: async () => {
          await send('PUT', path, { disabled: false });
          return 'Enabled.';
        },
        after: rerender,
      })
    : actionButton('Disable', {
        name: 'disable',
        question: `Disable ${r.name}? Its callbacks will be held (not sent, no attempt used) until it is enabled.`,
        run: async () => {
          await send('PUT', path, { disabled: true });
          return 'Disabled.';
        },
        after: rerender,
      });
  mount(
    main,
    h('p', h('a', { href: '#/receivers' }, '← Receivers')),
    flashMessage(),
    h('h1', 'Receiver ', h('span.muted', r.name)),
    h('div.controls', h('span', { class: `status ${r.disabled ? 'failed' : 'succeeded'}` }, r.disabled ? 'disabled' : 'enabled'), toggle),
    r.disabled && r.disabledReason ? h('p#disabled-reason.error', `Disabled ${when(r.disabledAt)}: ${r.disabledReason}`) : null,
    settings(r),
    h('h2', 'Event subscriptions'),
    subscriptionsPanel(r),
    h('h2', 'Authentication'),
    ...credentialsPanel(r, rerender),
    h('h2', 'Transformation'),
    transformPanel(r, {
      save: (transform) => send('PUT', path, { transform }),
      test: (body) => send('POST', `${path}/transform/test`, body),
      after: rerender,
    }),
    h('h2', 'Signing secrets'),
    secrets(r.secrets),
    h('h2', 'Receiver portal'),
    portalPanel(r.name),
    h('h2', `Figures since ${when(r.figures.since)}`),
    figures(r.figures),
    h('h2', 'Latency, last hour'),
    history.items.length === 0 ? h('p.empty', 'No calls in the last hour.') : latencyChart(history.items),
    h('h2', `Waiting callbacks (${waiting.items.length}${waiting.nextCursor ? '+' : ''})`),
    callbacksTable(waiting.items),
    h('h2', `Failed callbacks (${failed.items.length}${failed.nextCursor ? '+' : ''})`),
    recoveryPanel(r.name, current, rerender),
    callbacksTable(failed.items),
  );
}

function settings(r) {
  const rows = [
    ['url', r.url ?? '– (each callback gives its own)'],
    ['description', r.description ?? '–'],
    [
      'headers',
      Object.keys(r.headers).length
        ? Object.entries(r.headers)
            .map(([k, v]) => `${k}: ${v}`)
            .join('; ')
        : '–',
    ],
    ['timeout', r.timeoutMs ? formatMs(r.timeoutMs) : '– (service default)'],
    ['max attempts', r.maxAttempts ?? '– (service default)'],
    ['retry delays', r.retryDelaysMs.length ? r.retryDelaysMs.map(formatMs).join(', ') : '– (service default)'],
    ['failing since', when(r.failingSince)],
    ['created', when(r.createdAt)],
    ['updated', when(r.updatedAt)],
  ];
  return h('table#settings', h('tbody', ...rows.map(([k, v]) => h('tr', h('th', k), h('td', v)))));
}

/** Each secret masked until its button reveals it (and hides it again). */
function secrets(list) {
  const masked = (s) => `${s.slice(0, 6)}${'•'.repeat(12)}`;
  return h(
    'table#secrets',
    h('thead', h('tr', h('th', 'secret'), h('th', 'created'), h('th', 'signs until'), h('th', ''))),
    h(
      'tbody',
      ...list.map((s) => {
        const value = h('code.secret', masked(s.secret));
        const reveal = h(
          'button.secondary',
          {
            type: 'button',
            'data-action': 'reveal',
            onclick: () => {
              const shown = value.textContent === s.secret;
              value.textContent = shown ? masked(s.secret) : s.secret;
              reveal.textContent = shown ? 'Reveal' : 'Hide';
            },
          },
          'Reveal',
        );
        return h('tr', h('td', value), h('td', when(s.createdAt)), h('td', s.expiresAt ? when(s.expiresAt) : 'current'), h('td', reveal));
      }),
    ),
  );
}

function figures(f) {
  const item = (label, value) => h('div', h('span.muted', label), h('b', String(value)));
  const outcomes = Object.entries(f.outcomes).sort(([a], [b]) => (a === 'success' ? -1 : b === 'success' ? 1 : a.localeCompare(b)));
  return h(
    'div#figures.summary',
    item('pending', f.pending),
    item('in flight', f.inFlight),
    item('held', f.held),
    item('attempts', f.attempts),
    ...outcomes.map(([k, n]) => item(k, n)),
    item('p50', formatMs(f.latency.p50)),
    item('p90', formatMs(f.latency.p90)),
    item('p99', formatMs(f.latency.p99)),
  );
}

function callbacksTable(items) {
  if (items.length === 0) return h('p.empty', 'None.');
  const labels = shortIds(items.map((c) => c.id));
  return h(
    'table',
    h('thead', h('tr', h('th', 'callback'), h('th', 'url'), h('th', 'status'), h('th.num', 'attempts'), h('th', 'waiting / last error'))),
    h(
      'tbody',
      ...items.map((c) =>
        h(
          'tr',
          { 'data-callback': c.id },
          h('td', idLink({ id: c.id, href: `#/callback/${c.id}`, label: labels.get(c.id), externalId: c.externalId })),
          h('td.url', c.url),
          h('td', h('span', { class: `status ${c.status}` }, c.waiting ? 'held' : c.status)),
          h('td.num', c.attemptCount),
          h('td', c.waiting ? (c.waiting.detail ?? c.waiting.reason) : (c.lastError ?? '')),
        ),
      ),
    ),
  );
}
