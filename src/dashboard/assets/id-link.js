// An id in a list: its distinguishing tail (ids.js) or the caller's externalId, linked,
// with the full id on hover and a button that copies it.
import { h } from './dom.js';

/**
 * @param {{ id: string, href?: string, label: string, externalId?: string | null }} options
 * `label` is the id's tail from shortIds; an externalId, when there is one, is shown instead.
 */
export function idLink({ id, href, label, externalId }) {
  const text = externalId ?? label;
  const title = externalId ? `${externalId} (id ${id})` : id;
  return h('span.id', href ? h('a', { href, title, 'data-id': id }, text) : h('span', { title, 'data-id': id }, text), copyButton(id));
}

/** Copies `id` to the clipboard; the click does not reach a clickable row around it. */
export function copyButton(id) {
  const button = h(
    'button.copy',
    {
      type: 'button',
      title: `Copy ${id}`,
      'aria-label': `Copy id ${id}`,
      'data-copy': id,
      onclick: async (event) => {
        event.stopPropagation();
        const copied = await copyText(id);
        button.textContent = copied ? 'copied' : 'not copied';
        button.title = copied ? `Copied ${id}` : `Could not copy; the id is ${id}`;
        setTimeout(() => {
          button.textContent = 'copy';
          button.title = `Copy ${id}`;
        }, 1500);
      },
    },
    'copy',
  );
  return button;
}

/** The Clipboard API (a secure context: https, or this service on 127.0.0.1 / localhost); false when refused or missing. */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}
