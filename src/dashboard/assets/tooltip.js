// The one floating tooltip of the page, placed beside the pointer and kept on screen.
import { mount } from './dom.js';

const el = document.getElementById('tooltip');

export const tooltip = {
  show(event, content) {
    mount(el, ...content);
    el.hidden = false;
    const { width, height } = el.getBoundingClientRect();
    const x = event.clientX + 14 + width > window.innerWidth ? event.clientX - width - 14 : event.clientX + 14;
    const y = Math.min(event.clientY + 14, window.innerHeight - height - 4);
    el.style.left = `${Math.max(4, x)}px`;
    el.style.top = `${Math.max(4, y)}px`;
  },
  hide() {
    el.hidden = true;
  },
};
