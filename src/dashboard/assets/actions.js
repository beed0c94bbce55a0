// Buttons that change something (retry, cancel, disable, enable): each asks for
// confirmation in a modal <dialog>, then calls the API and reports the answer.
import { ApiError } from './api.js';
import { h } from './dom.js';

/** Asks `question` in a modal dialog; resolves true on "confirm", false on "cancel" or Escape. */
export function confirmAction(question, confirmLabel = 'Confirm') {
  return new Promise((resolve) => {
    const yes = h('button', { type: 'button', 'data-confirm': 'yes' }, confirmLabel);
    const no = h('button.secondary', { type: 'button', 'data-confirm': 'no' }, 'Cancel');
    const dialog = h('dialog.confirm', h('p', question), h('div.controls', yes, no));
    const done = (answer) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    yes.addEventListener('click', () => done(true));
    no.addEventListener('click', () => done(false));
    dialog.addEventListener('cancel', (event) => {
      event.preventDefault();
      done(false);
    });
    document.body.append(dialog);
    dialog.showModal();
    no.focus();
  });
}

/**
 * What the last action answered, and the page (its address) it was done on: every
 * render of that page shows it at its top (flashMessage) until the user goes to
 * another page. Not once only: a page that refreshes itself (a running batch) may
 * draw between the action and the render the action asked for.
 */
let flash = null;

/** Shows `text` at the top of this page from its next render on (flashMessage). */
export function flashNext(text) {
  flash = { text, page: location.hash };
}

/** The answer of the last action done on this page; else nothing. */
export function flashMessage() {
  if (flash && flash.page !== location.hash) flash = null;
  return flash ? h('p.flash', { role: 'status' }, flash.text) : null;
}

/**
 * A button that runs `run` after confirmation, then calls `after` (to re-render
 * the page, which shows the answer at its top: flashMessage) on success; without
 * `after`, or on failure, the answer shows next to the button.
 */
export function actionButton(label, { question, run, after, name }) {
  const message = h('span.action-result.muted');
  const button = h(
    'button.secondary',
    {
      type: 'button',
      'data-action': name,
      onclick: async () => {
        if (!(await confirmAction(question, label))) return;
        button.disabled = true;
        try {
          const text = (await run()) ?? 'Done.';
          message.textContent = text;
          message.className = 'action-result muted';
          if (after) {
            flashNext(text);
            await after();
          }
        } catch (error) {
          message.textContent = error instanceof ApiError ? error.message : String(error);
          message.className = 'action-result error';
        } finally {
          button.disabled = false;
        }
      },
    },
    label,
  );
  return h('span.action', button, ' ', message);
}
