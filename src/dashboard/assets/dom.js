// A tiny element builder. Text always goes through textContent, never innerHTML:
// URLs, labels and response data are the users' own strings.

/** h('td.num', {title: 'x'}, 'text', child) or h('table#id.class', …) → element. */
export function h(tag, attrs, ...children) {
  const [nameAndId, ...classes] = tag.split('.');
  const [name, id] = nameAndId.split('#');
  const el = document.createElement(name);
  if (id) el.id = id;
  if (classes.length) el.className = classes.join(' ');
  // A second argument that is not a plain object is the first child (0 included).
  if (attrs !== null && attrs !== undefined && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) children.unshift(attrs);
  else if (attrs) setAttrs(el, attrs);
  append(el, children);
  return el;
}

export function svg(tag, attrs = {}) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'style') for (const [p, val] of Object.entries(v)) el.style.setProperty(p, val);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces the content of `el`. */
export function mount(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

export function when(iso) {
  return iso ? new Date(iso).toLocaleString() : '–';
}
