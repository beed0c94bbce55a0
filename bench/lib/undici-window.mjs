import diagnostics from 'node:diagnostics_channel';
import { Agent, request } from 'undici';

// For `timed` windows, and only while one runs (an untimed baseline pays nothing):
// undici creates its request object synchronously inside `request()`, and announces
// when it writes that request's headers.
let created;
const sentAt = new WeakMap();
const onCreate = ({ request }) => (created = request);
const onSendHeaders = ({ request }) => sentAt.set(request, performance.now());

/**
 * The baseline every sending figure is compared with: a bare undici rolling window
 * (`window` requests in flight, each completion replaced at once by the next) of
 * `total` POSTs to `urls` (round robin), keep-alive, no database. Resolves with
 * calls per second. Bounded by `total` and `timeoutMs`.
 *
 * `timed: true` also gives each request its own `webhook-id` (`baseline-N`) and
 * returns `durations` (id → ms from its headers being written to its response
 * headers being read), the baseline for the service's recorded durations.
 */
export async function undiciWindow({ urls, total, window, timeoutMs = 60_000, body = '{"event":"bench"}', timed = false }) {
  const agent = new Agent({ connections: null, pipelining: 1, keepAliveTimeout: 4_000 });
  const headers = { 'content-type': 'application/json', 'user-agent': 'bench-baseline', 'webhook-id': 'baseline' };
  const durations = new Map();
  const deadline = Date.now() + timeoutMs;
  let started = 0;
  let finished = 0;
  let failed = 0;
  if (timed) {
    diagnostics.subscribe('undici:request:create', onCreate);
    diagnostics.subscribe('undici:client:sendHeaders', onSendHeaders);
  }
  const t0 = performance.now();
  await new Promise((resolve) => {
    const next = () => {
      if (started >= total || Date.now() > deadline) {
        if (finished === started) resolve();
        return;
      }
      const url = urls[started++ % urls.length];
      const id = `baseline-${started}`;
      const pending = request(url, { dispatcher: agent, method: 'POST', headers: timed ? { ...headers, 'webhook-id': id } : headers, body });
      const req = timed ? created : undefined;
      pending
        .then((res) => {
          if (timed) durations.set(id, performance.now() - sentAt.get(req));
          return res.body.dump().then(() => res.statusCode < 300 || failed++);
        })
        .catch(() => failed++)
        .finally(() => {
          finished++;
          next();
        });
    };
    for (let i = 0; i < window; i++) next();
  });
  const seconds = (performance.now() - t0) / 1000;
  if (timed) {
    diagnostics.unsubscribe('undici:request:create', onCreate);
    diagnostics.unsubscribe('undici:client:sendHeaders', onSendHeaders);
  }
  await agent.close();
  return { perSecond: finished / seconds, finished, failed, seconds, durations };
}

/**
 * Each timed duration minus the receiver's own time for the same request (its
 * `records()`), ms: the client's recording error.
 */
export function durationErrors(durations, records) {
  return records.ids.flatMap((id, i) => (durations.has(id) ? [durations.get(id) - records.handled[i]] : []));
}
