// The batch waterfall: one row per call on the batch's time axis, drawn on a
// canvas. Only the rows in view are drawn (the canvas is viewport-sized and sticky
// inside a scroller as tall as all rows), so ten thousand calls cost as much as
// forty. Hover shows code, timings and the phase breakdown; click opens the callback.
import { h } from './dom.js';
import { shortIds } from './ids.js';
import { colourOf, formatMs, niceTicks, PHASE_COLOURS, phaseSegments, rowAt, rowHeight, visibleRows } from './timeline.js';

const LABEL_WIDTH = 300;
const AXIS_HEIGHT = 26;
const MAX_VIEW_HEIGHT = 560;

export function waterfall(timeline, { tooltip, onOpen }) {
  const calls = timeline.calls;
  const labels = shortIds(calls.map((c) => c.callbackId));
  const rowH = rowHeight(calls.length);
  const span = Math.max(timeline.spanMs, 1);
  const viewH = Math.min(calls.length * rowH, MAX_VIEW_HEIGHT);
  const axis = h('canvas.axis');
  const canvas = h('canvas', { role: 'img', 'aria-label': `waterfall of ${calls.length} calls over ${formatMs(timeline.spanMs)}` });
  const spacer = h('div', { style: { height: `${Math.max(0, calls.length * rowH - viewH)}px` } });
  const scroller = h('div.scroller', { style: { height: `${viewH}px` } }, canvas, spacer);
  const root = h('div.waterfall', axis, scroller);
  const geometry = () => {
    const width = Math.max(LABEL_WIDTH + 200, scroller.clientWidth);
    return { width, plotX: LABEL_WIDTH, plotW: width - LABEL_WIDTH - 12 };
  };
  const xOf = (g, ms) => g.plotX + (ms / span) * g.plotW;

  function draw() {
    const g = geometry();
    sizeCanvas(axis, g.width, AXIS_HEIGHT);
    sizeCanvas(canvas, g.width, viewH);
    Object.assign(canvas.dataset, { rowHeight: rowH, plotX: g.plotX, plotWidth: g.plotW, spanMs: span, calls: calls.length });
    drawAxis(axis.getContext('2d'), g, span, xOf);
    drawRows(canvas.getContext('2d'), g, scroller.scrollTop);
  }

  function drawRows(ctx, g, scrollTop) {
    ctx.clearRect(0, 0, g.width, viewH);
    for (const t of niceTicks(span, 10)) {
      ctx.fillStyle = '#f1f3f5';
      ctx.fillRect(Math.round(xOf(g, t)), 0, 1, viewH);
    }
    const { first, last } = visibleRows(scrollTop, viewH, rowH, calls.length);
    ctx.font = '12px ui-monospace, Menlo, monospace';
    ctx.textBaseline = 'middle';
    for (let i = first; i < last; i++) {
      const c = calls[i];
      const y = i * rowH - scrollTop;
      const x0 = xOf(g, c.startMs);
      const w = Math.max(2, xOf(g, c.endMs) - x0);
      // Whole pixels only (no blurred edges): roomy rows get a 3 px margin, dense rows a 1 px gap below.
      ctx.fillStyle = colourOf(c.outcome);
      if (rowH >= 12) ctx.fillRect(x0, y + 3, w, rowH - 6);
      else ctx.fillRect(x0, y, w, Math.max(1, rowH - 1));
      if (rowH >= 12) {
        ctx.fillStyle = '#495057';
        ctx.fillText(ellipsis(ctx, c.url, LABEL_WIDTH - 12), 6, y + rowH / 2);
      }
      if (rowH >= 22) {
        const text = `${c.code} · ${formatMs(c.totalMs)}`;
        const inside = ctx.measureText(text).width + 8 < w;
        ctx.fillStyle = inside ? '#fff' : '#212529';
        ctx.fillText(text, inside ? x0 + 4 : x0 + w + 4, y + rowH / 2);
      }
    }
  }

  scroller.addEventListener('scroll', () => drawRows(canvas.getContext('2d'), geometry(), scroller.scrollTop));
  new ResizeObserver(draw).observe(scroller);
  const callAt = (event) => calls[rowAt(event.offsetY + scroller.scrollTop, rowH, calls.length)];
  canvas.addEventListener('mousemove', (event) => {
    const c = callAt(event);
    if (c) tooltip.show(event, tooltipContent(c, c.externalId ?? labels.get(c.callbackId)));
    else tooltip.hide();
    canvas.style.cursor = c ? 'pointer' : 'default';
  });
  canvas.addEventListener('mouseleave', () => tooltip.hide());
  canvas.addEventListener('click', (event) => {
    const c = callAt(event);
    if (c) onOpen(c);
  });
  requestAnimationFrame(draw);
  return root;
}

function sizeCanvas(canvas, width, height) {
  const ratio = window.devicePixelRatio || 1;
  if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
  }
  canvas.getContext('2d').setTransform(ratio, 0, 0, ratio, 0, 0);
}

function drawAxis(ctx, g, span, xOf) {
  ctx.clearRect(0, 0, g.width, AXIS_HEIGHT);
  ctx.font = '11px system-ui, sans-serif';
  ctx.textBaseline = 'middle';
  ctx.fillStyle = '#6c757d';
  ctx.fillText('call (url)', 6, AXIS_HEIGHT / 2);
  const ticks = niceTicks(span, Math.max(2, Math.floor(g.plotW / 90)));
  for (const t of ticks) {
    const x = Math.round(xOf(g, t));
    ctx.fillRect(x, AXIS_HEIGHT - 6, 1, 6);
    const label = formatMs(t);
    const w = ctx.measureText(label).width;
    ctx.fillText(label, Math.min(x - w / 2, g.width - w - 2), AXIS_HEIGHT / 2 - 2);
  }
}

function ellipsis(ctx, text, max) {
  if (ctx.measureText(text).width <= max) return text;
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (ctx.measureText(`${text.slice(0, mid)}…`).width <= max) lo = mid;
    else hi = mid - 1;
  }
  return `${text.slice(0, lo)}…`;
}

/** The hover card of one call: url, which callback (its externalId or id tail), code, outcome, timings, phases. */
export function tooltipContent(c, label) {
  const segments = phaseSegments(c);
  const bar = h('div.phasebar');
  for (const s of segments) {
    bar.append(h('span', { style: { width: `${(100 * (s.toMs - s.fromMs)) / Math.max(c.totalMs, 1)}%`, background: PHASE_COLOURS[s.name] } }));
  }
  const rows = [
    ['callback', label],
    ['code', `${c.code} (${c.outcome})`],
    ['attempt', c.attempt],
    ['start', formatMs(c.startMs)],
    ['end', formatMs(c.endMs)],
    ['total', formatMs(c.totalMs)],
    ...segments.map((s) => [s.name, formatMs(s.toMs - s.fromMs)]),
  ];
  return [h('div.t-url', c.url), h('table', h('tbody', ...rows.map(([k, v]) => h('tr', h('td', k), h('td', String(v)))))), bar];
}
