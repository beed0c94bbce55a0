// The portal's overview: settings (edit), its transform with "Try it" (edit), signing
// secrets (reveal; rotate), "Send a test" (replay), and the latency chart with the
// success rate of the last hour.
import { actionButton, flashMessage } from './actions.js';
import { h, when } from './dom.js';
import { latencyChart } from './latency.view.js';
import { portalGet, portalSend } from './portal.api.js';
import { formatMs } from './timeline.js';
import { transformPanel } from './transform.panel.js';

export async function overviewSections({ session, current, rerender }) {
  const to = new Date();
  const from = new Date(to.getTime() - 3_600_000);
  const [r, history] = await Promise.all([
    portalGet('/portal/api/receiver'),
    portalGet('/portal/api/latency', { bucket: '1m', from: from.toISOString(), to: to.toISOString() }),
  ]);
  if (!current()) return [];
  const can = (c) => session.capabilities.includes(c);
  const ok = history.items.reduce((n, i) => n + i.ok, 0);
  const total = history.items.reduce((n, i) => n + i.count, 0);
  return [
    flashMessage(),
    h('h1', r.name, ' ', h('span', { class: `status ${r.disabled ? 'failed' : 'succeeded'}` }, r.disabled ? 'disabled' : 'enabled')),
    r.disabled && r.disabledReason ? h('p#disabled-reason.error', `Disabled ${when(r.disabledAt)}: ${r.disabledReason}`) : null,
    h('h2', 'Settings'),
    settings(r, can('edit'), rerender),
    can('edit') ? transformSection(r, rerender) : null,
    h('h2', 'Signing secrets'),
    h('p.muted', 'Each delivery is signed (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature) with these; verify with the current one.'),
    secrets(can('rotate'), rerender),
    can('replay') ? testSection() : null,
    h('h2', 'Latency and success, last hour'),
    h('p#success-rate', total === 0 ? 'No calls in the last hour.' : `${ok} of ${total} attempts succeeded (${((100 * ok) / total).toFixed(1)}%).`),
    total === 0 ? null : latencyChart(history.items),
  ];
}

function settings(r, editable, rerender) {
  const headers = Object.entries(r.headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n');
  const rows = [
    ['url', r.url ?? '–'],
    ['headers', headers || '–'],
    ['timeout', r.timeoutMs ? formatMs(r.timeoutMs) : '– (sender default)'],
    ['failing since', when(r.failingSince)],
  ];
  const table = h('table#settings', h('tbody', ...rows.map(([k, v]) => h('tr', h('th', k), h('td', v)))));
  if (!editable) return table;
  const url = h('input#edit-url', { type: 'url', value: r.url ?? '', size: 60, 'aria-label': 'url' });
  const headerText = h('textarea#edit-headers', { rows: 3, cols: 60, 'aria-label': 'headers, one name: value a line' });
  headerText.value = headers;
  const message = h('span.action-result.muted');
  const save = h('button', { type: 'button', 'data-action': 'save-settings' }, 'Save');
  save.addEventListener('click', async () => {
    save.disabled = true;
    try {
      const parsed = Object.fromEntries(
        headerText.value
          .split('\n')
          .map((line) => line.trim())
          .filter(Boolean)
          .map((line) => [line.slice(0, line.indexOf(':')).trim(), line.slice(line.indexOf(':') + 1).trim()]),
      );
      // The URL goes only when changed: the portal sets public addresses only, and a
      // receiver whose sender set a private one keeps it while its headers are edited.
      await portalSend('PATCH', '/portal/api/receiver', { ...(url.value !== (r.url ?? '') && { url: url.value }), headers: parsed });
      await rerender();
    } catch (error) {
      message.textContent = error.message;
      message.className = 'action-result error';
    } finally {
      save.disabled = false;
    }
  });
  const toggle = actionButton(r.disabled ? 'Enable' : 'Disable', {
    name: r.disabled ? 'enable' : 'disable',
    question: r.disabled ? 'Enable? Held deliveries will be sent.' : 'Disable? Deliveries will be held (not sent) until you enable again.',
    run: async () => {
      await portalSend('PATCH', '/portal/api/receiver', { disabled: !r.disabled });
      return r.disabled ? 'Enabled.' : 'Disabled.';
    },
    after: rerender,
  });
  return h('div', table, h('div.edit', h('label', 'URL ', url), h('label', 'Headers ', headerText), h('div.controls', save, toggle, message)));
}

/** Masked until "Reveal" fetches them (GET /portal/api/secrets): the page holds no secret until asked. */
function secrets(rotatable, rerender) {
  const shown = h('div.secret-values', h('p.muted', 'whsec_••••••••••••'));
  const reveal = h('button.secondary', { type: 'button', 'data-action': 'reveal' }, 'Reveal');
  reveal.addEventListener('click', async () => {
    if (reveal.textContent === 'Hide') {
      shown.replaceChildren(h('p.muted', 'whsec_••••••••••••'));
      reveal.textContent = 'Reveal';
      return;
    }
    const { secrets: list } = await portalGet('/portal/api/secrets');
    shown.replaceChildren(secretTable(list));
    reveal.textContent = 'Hide';
  });
  const rotate = rotatable
    ? actionButton('Rotate', {
        name: 'rotate',
        question: 'Rotate the signing secret? The current one keeps signing beside the new one for 24 hours.',
        run: async () => {
          await portalSend('POST', '/portal/api/secrets/rotate');
          return 'Rotated: a new secret signs now, the old one for 24 hours more.';
        },
        after: rerender,
      })
    : null;
  return h('div#secrets', shown, h('div.controls', reveal, rotate));
}

function secretTable(list) {
  return h(
    'table#secret-list',
    h('thead', h('tr', h('th', 'secret'), h('th', 'created'), h('th', 'signs until'))),
    h(
      'tbody',
      ...list.map((s) => h('tr', h('td', h('code.secret', s.secret)), h('td', when(s.createdAt)), h('td', s.expiresAt ? when(s.expiresAt) : 'current'))),
    ),
  );
}

function testSection() {
  const result = h('div#test-result');
  const button = h('button', { type: 'button', 'data-action': 'send-test' }, 'Send a test');
  button.addEventListener('click', async () => {
    button.disabled = true;
    result.replaceChildren(h('p.muted', 'Sending…'));
    try {
      // the test call's attempt, answered at once; nothing is stored
      const a = await portalSend('POST', '/portal/api/test');
      const status = a.ok ? 'succeeded' : 'failed';
      result.replaceChildren(
        h(
          'p',
          h('span', { class: `status ${status}` }, status),
          ' ',
          `${a.statusCode ?? a.outcome ?? 'not sent'} in ${formatMs(a.durationMs)}${a.error ? `: ${a.error}` : ''}`,
          a.auth ? ` (${a.auth} auth)` : '',
        ),
        a.responseBody ? h('pre.snippet', a.responseBody) : '',
      );
    } catch (error) {
      result.replaceChildren(h('p.error', error.message));
    } finally {
      button.disabled = false;
    }
  });
  return [
    h('h2', 'Send a test'),
    h('p.muted', 'A signed example call (type portal.test) to your URL now, with your credentials; it is not stored as a delivery.'),
    button,
    result,
  ];
}

/** Its transform (edit): the code that reshapes each delivery before it is sent, tried here on a sample or a delivery. */
function transformSection(r, rerender) {
  return [
    h('h2', 'Transformation'),
    h('p.muted', 'JavaScript that reshapes each delivery before it is sent to you (or drops it, returning null).'),
    transformPanel(r, {
      save: (transform) => portalSend('PATCH', '/portal/api/receiver', { transform }),
      test: (body) => portalSend('POST', '/portal/api/transform/test', body),
      after: rerender,
    }),
  ];
}
