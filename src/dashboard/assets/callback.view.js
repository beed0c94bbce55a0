// One callback with every attempt and where its time went.
import { get, send } from './api.js';
import { actionButton, flashMessage } from './actions.js';
import { h, mount, when } from './dom.js';
import { copyButton } from './id-link.js';
import { colourOf, formatMs, phaseSegments } from './timeline.js';

export async function callbackView(main, context) {
  const { id, current } = context;
  /** @type {import('./api.js').Schemas['CallbackDetailDto']} */
  const c = await get(`/v1/callbacks/${id}`);
  if (!current()) return;
  const rerender = () => callbackView(main, context);
  const receiver = c.receiver ? h('a', { href: `#/receiver/${encodeURIComponent(c.receiver)}` }, c.receiver) : '–';
  mount(
    main,
    h('p', h('a', { href: `#/batch/${c.batchId}` }, '← Batch')),
    flashMessage(),
    h('h1', 'Callback ', h('span.muted', c.id), copyButton(c.id)),
    h('div.controls', ...actions(c, rerender)),
    h(
      'table',
      h(
        'tbody',
        ...[
          ['url', `${c.method} ${c.url}`],
          ['external id', c.externalId ?? '–'],
          ['receiver', receiver],
          ['status', h('span', { class: `status ${c.status}` }, c.status)],
          ...(c.waiting ? [['waiting', h('span#waiting', { title: c.waiting.reason }, c.waiting.detail)]] : []),
          ['priority', c.priority ?? 'normal'],
          ...(c.orderingKey ? [['ordering key', c.orderingKey]] : []),
          ['attempts', `${c.attemptCount} of ${c.maxAttempts}`],
          ['timeout', formatMs(c.timeoutMs)],
          ['next attempt', when(c.nextAttemptAt)],
          ['last error', c.lastError ?? '–'],
          ['created', when(c.createdAt)],
          ['completed', when(c.completedAt)],
        ].map(([k, v]) => h('tr', h('th', k), h('td', v))),
      ),
    ),
    h('h2', `Attempts (${c.attempts.length})`),
    c.attempts.length === 0 ? h('p.empty', 'Not sent yet.') : attemptsTable(c.attempts),
  );
}

/** Retry (failed or cancelled) or cancel (pending or in flight), each after confirmation. */
function actions(c, after) {
  if (c.status === 'failed' || c.status === 'cancelled') {
    return [
      actionButton('Retry', {
        name: 'retry',
        question: `Send this ${c.status} callback again to ${c.url}?`,
        after,
        run: async () => {
          await send('POST', `/v1/callbacks/${c.id}/retry`);
          return 'Queued again.';
        },
      }),
    ];
  }
  if (c.status === 'pending' || c.status === 'in_flight') {
    return [
      actionButton('Cancel', {
        name: 'cancel',
        question: `Cancel this ${c.status === 'pending' ? 'pending' : 'in-flight'} callback? It will not be sent again.`,
        after,
        run: async () => {
          await send('POST', `/v1/callbacks/${c.id}/cancel`);
          return 'Cancelled.';
        },
      }),
    ];
  }
  return [];
}

function attemptsTable(attempts) {
  return h(
    'table#attempts',
    h('thead', h('tr', ...['#', 'started', 'outcome', 'code', 'total', 'dns', 'connect', 'tls', 'first byte', 'error', 'response'].map((t) => h('th', t)))),
    h(
      'tbody',
      ...attempts.map((a) => {
        const p = a.phases ?? {};
        const title = phaseSegments({ totalMs: a.durationMs, outcome: a.outcome, phases: p })
          .map((s) => `${s.name} ${formatMs(s.toMs - s.fromMs)}`)
          .join(', ');
        return h(
          'tr',
          { title },
          h('td.num', a.number),
          h('td', when(a.startedAt)),
          h('td', h('span', { style: { color: colourOf(a.outcome) } }, a.outcome)),
          h('td.num', a.statusCode ?? '–'),
          h('td.num', formatMs(a.durationMs)),
          h('td.num', formatMs(p.dnsMs)),
          h('td.num', formatMs(p.connectMs)),
          h('td.num', formatMs(p.tlsMs)),
          h('td.num', formatMs(p.firstByteMs)),
          h('td', a.error ?? ''),
          h('td.url', a.responseBody ? String(a.responseBody).slice(0, 200) : ''),
        );
      }),
    ),
  );
}
