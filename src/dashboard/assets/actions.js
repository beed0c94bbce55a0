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

/** What the last action answered, shown once by the page it re-rendered (flashMessage). */
let flash = null;

/** Shows `text` at the top of the page the next render draws (flashMessage). */
export function flashNext(text) {
  flash = text;
}

/** The answer of the action that just re-rendered this page, once; else nothing. */
export function flashMessage() {
  const text = flash;
  flash = null;
  return text ? h('p.flash', { role: 'status' }, text) : null;
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
            flash = text;
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
