// A receiver's transform: the code in an editor (a textarea), Save and Remove, and
// "Try it" on a sample body or a past delivery (by callback id), which shows what
// would be sent, or the error and its line, sending nothing. The dashboard's receiver
// page (the /v1 API) and the portal (its /portal/api, with `edit`) both show it, each
// with its own calls.
import { ApiError } from './api.js';
import { flashNext } from './actions.js';
import { h } from './dom.js';

const TEMPLATE = `function handler(webhook) {
  // webhook: {method, url, headers, body, eventType, receiver, attempt}; body parsed when JSON.
  // Return it (changed or not), or null to send nothing.
  return webhook;
}`;
const SAMPLE = '{"type": "order.paid", "data": {"orderId": "o-1001", "amount": 1500}}';

/**
 * @param {{transform: {code: string} | null}} r the receiver
 * @param {object} calls
 * @param {(transform: {code: string} | null) => Promise<unknown>} calls.save sets or removes its transform
 * @param {(body: object) => Promise<any>} calls.test runs a test (TransformTestDto), answers TransformTestResultDto
 * @param {() => Promise<void>} calls.after draws the page again
 */
export function transformPanel(r, { save: saveTransform, test, after }) {
  const code = h('textarea#transform-code.code', { rows: 12, spellcheck: 'false', 'aria-label': 'Transform code' });
  code.value = r.transform?.code ?? TEMPLATE;
  const payload = h('textarea#transform-payload.code', { rows: 4, spellcheck: 'false', 'aria-label': 'Sample body (JSON)' });
  payload.value = SAMPLE;
  const callbackId = h('input#transform-callback', { placeholder: 'or a callback id of this receiver', size: 38, 'aria-label': 'Callback id' });
  const status = h('p#transform-status.muted', r.transform ? 'Its callbacks go through this transform.' : 'No transform: its callbacks go as stored.');
  const result = h('pre#transform-result.result');
  result.hidden = true;

  const report = (error) => {
    status.className = 'error';
    status.textContent = error instanceof ApiError ? error.message : String(error);
  };
  const save = h('button', { type: 'button', 'data-action': 'save-transform', onclick: () => put({ code: code.value }, 'Transform saved.') }, 'Save');
  const remove = r.transform
    ? h('button.secondary', { type: 'button', 'data-action': 'remove-transform', onclick: () => put(null, 'Transform removed.') }, 'Remove')
    : null;
  const tryIt = h('button.secondary', { type: 'button', 'data-action': 'try-transform', onclick: () => run() }, 'Try it');

  async function put(transform, done) {
    try {
      await saveTransform(transform);
      flashNext(done);
      await after();
    } catch (error) {
      report(error);
    }
  }

  async function run() {
    const body = { code: code.value };
    try {
      if (callbackId.value.trim()) body.callbackId = callbackId.value.trim();
      else body.payload = JSON.parse(payload.value);
    } catch {
      return report('The sample body is not JSON.');
    }
    try {
      const answer = await test(body);
      status.className = 'muted';
      status.textContent = `Ran in ${answer.durationMs} ms; nothing was sent.`;
      result.hidden = false;
      result.dataset.result = answer.result;
      result.textContent = describe(answer);
    } catch (error) {
      report(error);
    }
  }

  return h('div#transform', code, h('div.controls', save, remove), h('h3', 'Try it'), payload, h('div.controls', callbackId, tryIt), status, result);
}

/** What a test run answered, as text. */
function describe(answer) {
  if (answer.result === 'cancel') return 'Nothing would be sent: the handler returned null (the callback is cancelled).';
  if (answer.result === 'error') return `Error${answer.error.line ? ` at line ${answer.error.line}:${answer.error.column}` : ''}: ${answer.error.message}`;
  const { method, url, headers, body } = answer.request;
  // the receiver's credentials are added when it is sent, after the transform, and never shown
  const added = [
    answer.auth ? `authorization: (its ${answer.auth} auth, added when sent)` : null,
    answer.tls ? '(sent through its own TLS settings: client certificate, CA)' : null,
  ].filter(Boolean);
  return [`${method} ${url}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), ...added, '', body ?? ''].join('\n');
}
