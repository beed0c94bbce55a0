// The receiver portal: one receiver's deliveries, secrets, settings and latency, as
// its session allows (read always; replay, rotate, edit when granted). Two pages:
// `#/` the overview, `#/delivery/<id>` one delivery with its attempts.
import { ApiError } from './api.js';
import { h, mount, when } from './dom.js';
import { deliveriesSection, deliveryView } from './portal.deliveries.js';
import { overviewSections } from './portal.overview.js';
import { loadSession } from './portal.api.js';

const main = document.getElementById('main');
let session;
let generation = 0;

/** Colours and fonts: the session's CSS variables, then `?theme=dark` if asked. */
function applyTheme(theme) {
  for (const [name, value] of Object.entries(theme ?? {})) document.documentElement.style.setProperty(name, value);
  const asked = new URLSearchParams(location.search).get('theme');
  if (asked === 'dark' || asked === 'light') document.documentElement.classList.add(`theme-${asked}`);
}

async function render() {
  const mine = ++generation;
  const current = () => mine === generation;
  const [, page, id] = /^#\/(delivery)\/([0-9a-f-]{36})$/.exec(location.hash) ?? [];
  try {
    if (page === 'delivery') await deliveryView(main, { session, id, current });
    else {
      const context = { session, current, rerender: render };
      const parts = await Promise.all([overviewSections(context), deliveriesSection(context)]);
      if (current()) mount(main, ...parts);
    }
  } catch (error) {
    if (!current()) return;
    if (error instanceof ApiError && error.status === 401) return expired();
    mount(main, h('p.error', error instanceof Error ? error.message : String(error)));
  }
}

function expired() {
  mount(main, h('h1', 'This link has expired'), h('p#expired', 'The portal session is over or was revoked. Ask the sender for a new link.'));
}

async function start() {
  try {
    session = await loadSession();
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return expired();
    return mount(main, h('p.error', String(error)));
  }
  applyTheme(session.theme);
  document.getElementById('receiver-name').textContent = session.receiver;
  document.title = `Webhooks · ${session.receiver}`;
  const back = document.getElementById('back');
  if (session.returnUrl && /^https?:/.test(session.returnUrl)) {
    back.href = session.returnUrl;
    back.hidden = false;
  }
  mount(document.querySelector('header nav'), h('span.muted', `session until ${when(session.expiresAt)} · ${session.capabilities.join(', ')}`));
  addEventListener('hashchange', render);
  await render();
}

void start();
