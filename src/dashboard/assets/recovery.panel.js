// "Replay failed since…" on a receiver's page: counts what a recovery would send
// again (POST /v1/recoveries/preview), asks with that count, starts it, then shows
// its progress (GET /v1/recoveries/{id}) until everything it sent again has settled,
// and then draws the page again (its failed list changed) with the last progress on top.
import { ApiError, get, send } from './api.js';
import { confirmAction, flashNext } from './actions.js';
import { h, when } from './dom.js';

/** The windows offered, in hours back from now. */
const WINDOWS = [
  ['1 hour', 1],
  ['6 hours', 6],
  ['24 hours', 24],
  ['7 days', 168],
];
const POLL_MS = 500;

/**
 * @param {string} receiver its name
 * @param {() => boolean} current whether the page is still shown
 * @param {() => Promise<void>} after draws the page again
 */
export function recoveryPanel(receiver, current, after) {
  const since = h('select#replay-since', ...WINDOWS.map(([label, hours]) => h('option', { value: String(hours) }, label)));
  const progress = h('span#replay-progress.muted');
  const button = h(
    'button.secondary',
    {
      type: 'button',
      'data-action': 'replay',
      onclick: async () => {
        button.disabled = true;
        try {
          const settled = await replay(receiver, Number(since.value), progress, current);
          if (settled && current()) {
            flashNext(`Replay of ${receiver}: ${settled}`);
            await after();
          }
        } catch (error) {
          progress.textContent = error instanceof ApiError ? error.message : String(error);
          progress.className = 'error';
        } finally {
          button.disabled = false;
        }
      },
    },
    'Replay failed since…',
  );
  return h('div#replay.controls', h('label', 'Failed callbacks accepted in the last ', since), button, progress);
}

/** Runs one replay; resolves to its last progress line once all it sent again has settled, else undefined. */
async function replay(receiver, hours, progress, current) {
  const body = { receiver, since: new Date(Date.now() - hours * 3_600_000).toISOString() };
  progress.className = 'muted';
  const { matched } = await send('POST', '/v1/recoveries/preview', body);
  if (matched === 0) {
    progress.textContent = 'No failed callbacks in that window.';
    return;
  }
  const question = `Send ${matched} failed callback(s) of ${receiver} accepted since ${when(body.since)} again? Each keeps its webhook-id; they go at low priority.`;
  if (!(await confirmAction(question, 'Replay'))) return;
  /** @type {import('./api.js').Schemas['RecoveryDto']} */
  let r = await send('POST', '/v1/recoveries', body);
  progress.textContent = line(r);
  while (current() && (r.state === 'running' || r.pending > 0)) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    r = await get(`/v1/recoveries/${r.id}`);
    progress.textContent = line(r);
  }
  return current() ? line(r) : undefined;
}

const line = (r) => `requeued ${r.requeued}/${r.matched}, delivered ${r.delivered}, failed ${r.failed}, pending ${r.pending} (${r.state})`;
