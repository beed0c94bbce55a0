// "Portal link" on a receiver's page: mints a session of the receiver's portal
// (POST /v1/receivers/{name}/portal-sessions) with the capabilities ticked and the
// lifetime chosen, and shows its link to copy and hand to the receiver; "Revoke all"
// ends every session of it. The link carries the session's token: anyone holding it
// sees the receiver's deliveries until it expires or is revoked.
import { ApiError, send } from './api.js';
import { actionButton } from './actions.js';
import { h, when } from './dom.js';
import { copyText } from './id-link.js';

const TTLS = [
  ['1 hour', 3600],
  ['24 hours', 86_400],
  ['7 days', 604_800],
];
const CAPABILITIES = [
  ['replay', 'replay deliveries and send a test'],
  ['rotate', 'rotate its secret'],
  ['edit', 'change its URL, headers and transform, disable and enable'],
];

/** @param {string} receiver its name */
export function portalPanel(receiver) {
  const path = `/v1/receivers/${encodeURIComponent(receiver)}/portal-sessions`;
  const ttl = h('select#portal-ttl', { 'aria-label': 'portal link lifetime' }, ...TTLS.map(([label, s]) => h('option', { value: String(s) }, label)));
  const boxes = CAPABILITIES.map(([name, label]) => h('label', h('input', { type: 'checkbox', name, 'data-capability': name }), ` ${label}`));
  const result = h('div#portal-link');
  const make = h('button.secondary', { type: 'button', 'data-action': 'portal-link' }, 'Make a portal link');
  make.addEventListener('click', async () => {
    make.disabled = true;
    try {
      const capabilities = boxes
        .map((b) => b.querySelector('input'))
        .filter((i) => i.checked)
        .map((i) => i.name);
      const s = await send('POST', path, { ttlSeconds: Number(ttl.value), capabilities });
      const field = h('input#portal-url', { type: 'text', readonly: true, value: s.url, size: 80, 'aria-label': 'portal link' });
      const copy = h('button.secondary', { type: 'button', 'data-action': 'portal-copy' }, 'Copy');
      copy.addEventListener('click', async () => {
        copy.textContent = (await copyText(s.url)) ? 'Copied' : 'Select and copy it';
      });
      result.replaceChildren(
        h('p', field, ' ', copy, ' ', h('a', { href: s.url, target: '_blank', rel: 'noopener noreferrer' }, 'Open')),
        h('p.muted', `${s.capabilities.join(', ')}; until ${when(s.expiresAt)}. Anyone with the link sees this receiver's deliveries until then.`),
      );
    } catch (error) {
      result.replaceChildren(h('p.error', error instanceof ApiError ? error.message : String(error)));
    } finally {
      make.disabled = false;
    }
  });
  const revoke = actionButton('Revoke all portal links', {
    name: 'portal-revoke',
    question: `End every portal session of ${receiver}? Their links stop working at once.`,
    run: async () => `Revoked ${(await send('DELETE', path)).revoked} portal session(s).`,
  });
  return h('div#portal-panel', h('div.controls', ttl, ...boxes, make, revoke), result);
}
