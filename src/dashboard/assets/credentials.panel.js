// A receiver's authentication on its page: what its calls carry (`auth`: basic, bearer,
// OAuth2; `tls`: client certificate and CA), shown write-only as the API answers it
// ("set" for a secret), a form that sets them with PUT /v1/receivers/{name} (a secret
// field left empty keeps the stored one, as the API does for the same type), and "Send a
// test": one signed example call now (POST /v1/receivers/{name}/test), its attempt shown.
import { ApiError, send } from './api.js';
import { actionButton } from './actions.js';
import { h, when } from './dom.js';
import { formatMs } from './timeline.js';

const SECRET_FIELD = { basic: 'password', bearer: 'token', oauth2: 'clientSecret' };
const FIELDS = {
  basic: ['username', 'password'],
  bearer: ['token'],
  oauth2: ['tokenUrl', 'clientId', 'clientSecret', 'scope', 'audience', 'clientAuth'],
};

/** @param {import('./api.js').Schemas['ReceiverDetailDto']} r @param {() => Promise<void>} rerender */
export function credentialsPanel(r, rerender) {
  const path = `/v1/receivers/${encodeURIComponent(r.name)}`;
  return [shown(r), authForm(r, path, rerender), tlsForm(r, path, rerender), h('h3', 'Send a test'), testCall(path)];
}

function shown(r) {
  const auth = r.auth
    ? Object.entries(r.auth)
        .filter(([, v]) => v !== null && v !== undefined)
        .map(([k, v]) => `${k}: ${v}`)
        .join('; ')
    : 'none';
  const cert = (c) => `${c.subject} (issuer ${c.issuer}, until ${when(c.notAfter)})`;
  const tls = r.tls
    ? [
        r.tls.clientCertificate ? `client certificate ${cert(r.tls.clientCertificate)}, key ${r.tls.clientKey}` : 'no client certificate',
        r.tls.ca ? `CA ${r.tls.ca.map(cert).join(', ')}` : 'the system CAs',
      ].join('; ')
    : 'none: the system CAs, no client certificate';
  return h('table#credentials', h('tbody', h('tr', h('th', 'auth'), h('td', auth)), h('tr', h('th', 'tls'), h('td', tls))));
}

function authForm(r, path, rerender) {
  const type = h(
    'select#auth-type',
    { 'aria-label': 'auth type' },
    ...['basic', 'bearer', 'oauth2'].map((t) => h('option', { value: t, ...(r.auth?.type === t && { selected: true }) }, t)),
  );
  const inputs = h('div#auth-fields');
  const draw = () => {
    const t = type.value;
    const same = r.auth?.type === t;
    inputs.replaceChildren(
      ...FIELDS[t].map((f) => {
        const secret = f === SECRET_FIELD[t];
        const value = same && !secret && r.auth[f] ? String(r.auth[f]) : '';
        const placeholder = secret && same ? 'set: leave empty to keep it' : f === 'clientAuth' ? 'basic or post' : '';
        return h('label', `${f} `, h('input', { name: f, type: secret ? 'password' : 'text', value, placeholder, autocomplete: 'off', 'data-auth-field': f }));
      }),
    );
  };
  type.addEventListener('change', draw);
  draw();
  const save = actionButton('Save auth', {
    name: 'save-auth',
    question: `Set how calls to ${r.name} authenticate? Its next calls carry it.`,
    run: async () => {
      const auth = { type: type.value };
      for (const input of inputs.querySelectorAll('input')) if (input.value !== '') auth[input.name] = input.value;
      await send('PUT', path, { auth });
      return 'Auth saved.';
    },
    after: rerender,
  });
  const remove = r.auth
    ? actionButton('Remove auth', {
        name: 'remove-auth',
        question: `Send ${r.name}'s calls without authentication?`,
        run: async () => {
          await send('PUT', path, { auth: null });
          return 'Auth removed.';
        },
        after: rerender,
      })
    : null;
  return h('div.credentials-form', h('h3', 'Auth'), h('div.controls', type, inputs), h('div.controls', save, remove));
}

function tlsForm(r, path, rerender) {
  const area = (name, label) => h('label', `${label} `, h('textarea', { name, rows: 3, cols: 64, placeholder: '-----BEGIN …', 'data-tls-field': name }));
  const fields = [area('clientCertificate', 'client certificate (PEM)'), area('clientKey', 'client key (PEM, write-only)'), area('ca', 'CA (PEM)')];
  const save = actionButton('Save TLS', {
    name: 'save-tls',
    question: `Set ${r.name}'s mutual TLS? Fields left empty keep what is stored.`,
    run: async () => {
      const tls = {};
      for (const label of fields) {
        const t = label.querySelector('textarea');
        if (t.value.trim() !== '') tls[t.name] = t.value;
      }
      await send('PUT', path, { tls });
      return 'TLS saved.';
    },
    after: rerender,
  });
  const remove = r.tls
    ? actionButton('Remove TLS', {
        name: 'remove-tls',
        question: `Remove ${r.name}'s client certificate and CA?`,
        run: async () => {
          await send('PUT', path, { tls: null });
          return 'TLS removed.';
        },
        after: rerender,
      })
    : null;
  return h('div.credentials-form', h('h3', 'Mutual TLS'), ...fields, h('div.controls', save, remove));
}

function testCall(path) {
  const result = h('div#test-result');
  const button = h('button.secondary', { type: 'button', 'data-action': 'send-test' }, 'Send a test');
  button.addEventListener('click', async () => {
    button.disabled = true;
    result.replaceChildren(h('p.muted', 'Sending…'));
    try {
      const a = await send('POST', `${path}/test`);
      const phases = Object.entries(a.phases)
        .filter(([, v]) => v !== null && v !== undefined)
        .map(([k, v]) => `${k.replace(/Ms$/, '')} ${formatMs(v)}`)
        .join(', ');
      result.replaceChildren(
        h(
          'p',
          h('span', { class: `status ${a.ok ? 'succeeded' : 'failed'}` }, a.ok ? 'succeeded' : 'failed'),
          ` ${a.statusCode ?? a.outcome ?? 'not sent'} in ${formatMs(a.durationMs)}${a.auth ? `, ${a.auth} auth` : ''} (${phases})`,
          a.error ? h('span.error', ` ${a.error}`) : null,
        ),
        a.responseBody ? h('pre.payload', a.responseBody) : null,
      );
    } catch (error) {
      result.replaceChildren(h('p.error', error instanceof ApiError ? error.message : String(error)));
    } finally {
      button.disabled = false;
    }
  });
  return h('div', h('p.muted', 'One signed example call ({"type":"receiver.test"}) to its URL now, with its credentials; nothing is stored.'), button, result);
}
