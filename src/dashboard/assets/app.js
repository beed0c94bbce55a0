// Hash router: #/ batches, #/batch/<id>, #/callback/<id>, #/latency?host=…, #/receivers, #/receiver/<name>,
// #/events?type=…, #/event/<id>
// Every view is a function (main, params) → Promise; a 401 sends the user to log in.
import { ApiError, checkKey, session } from './api.js';
import { h, mount } from './dom.js';
import { batchesView } from './batches.view.js';
import { batchView } from './batch.view.js';
import { callbackView } from './callback.view.js';
import { eventView } from './event.view.js';
import { eventsView } from './events.view.js';
import { latencyView } from './latency.view.js';
import { receiverView } from './receiver.view.js';
import { receiversView } from './receivers.view.js';
import { tooltip } from './tooltip.js';

const main = document.getElementById('main');
const logout = document.getElementById('logout');

const ROUTES = [
  [/^#\/batch\/([\w-]+)$/, batchView],
  [/^#\/callback\/([\w-]+)$/, callbackView],
  [/^#\/latency$/, latencyView],
  [/^#\/receivers$/, receiversView],
  [/^#\/receiver\/([^/?]+)$/, receiverView],
  [/^#\/events$/, eventsView],
  [/^#\/event\/([^/?]+)$/, eventView],
  [/^#\/?$/, batchesView],
];

let generation = 0;

async function route() {
  const mine = ++generation;
  tooltip.hide();
  logout.hidden = !session.key;
  if (!session.key) return loginView();
  const [path, query] = (location.hash || '#/').split('?');
  const match = ROUTES.map(([re, view]) => [re.exec(path), view]).find(([m]) => m);
  if (!match) return mount(main, h('p.error', 'No such page.'), h('a', { href: '#/' }, 'Back to batches'));
  mount(main, h('p.muted', 'Loading…'));
  try {
    await match[1](main, { id: match[0][1], query: new URLSearchParams(query ?? ''), current: () => mine === generation });
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      session.logout();
      return route();
    }
    if (mine === generation) mount(main, h('p.error', error instanceof ApiError ? `${error.message} (${error.status})` : String(error)));
  }
}

function loginView() {
  const input = h('input', { type: 'password', name: 'key', placeholder: 'cbk_…', autocomplete: 'off', required: true, 'aria-label': 'API key' });
  const message = h('p.error', { hidden: true });
  const form = h(
    'form.login',
    {
      onsubmit: async (event) => {
        event.preventDefault();
        const problem = await checkKey(input.value.trim());
        if (problem) {
          message.textContent = problem;
          message.hidden = false;
          return;
        }
        session.login(input.value.trim());
        route();
      },
    },
    h('h1', 'Log in'),
    h('p.muted', 'Paste an API key. It is kept in this tab only (sessionStorage) and sent as a Bearer token to this service.'),
    input,
    h('button', { type: 'submit' }, 'Log in'),
    message,
  );
  mount(main, form);
  input.focus();
}

logout.addEventListener('click', () => {
  session.logout();
  location.hash = '#/';
  route();
});
window.addEventListener('hashchange', route);
route();
