import { Agent, request } from 'undici';

/**
 * The baseline every sending figure is compared with: a bare undici rolling window
 * (`window` requests in flight, each completion replaced at once by the next) of
 * `total` POSTs to `urls` (round robin), keep-alive, no database. Resolves with
 * calls per second. Bounded by `total` and `timeoutMs`.
 */
export async function undiciWindow({ urls, total, window, timeoutMs = 60_000, body = '{"event":"bench"}' }) {
  const agent = new Agent({ connections: null, pipelining: 1, keepAliveTimeout: 4_000 });
  const headers = { 'content-type': 'application/json', 'user-agent': 'bench-baseline', 'webhook-id': 'baseline' };
  const deadline = Date.now() + timeoutMs;
  let started = 0;
  let finished = 0;
  let failed = 0;
  const t0 = performance.now();
  await new Promise((resolve) => {
    const next = () => {
      if (started >= total || Date.now() > deadline) {
        if (finished === started) resolve();
        return;
      }
      const url = urls[started++ % urls.length];
      request(url, { dispatcher: agent, method: 'POST', headers, body })
        .then((res) => res.body.dump().then(() => res.statusCode < 300 || failed++))
        .catch(() => failed++)
        .finally(() => {
          finished++;
          next();
        });
    };
    for (let i = 0; i < window; i++) next();
  });
  const seconds = (performance.now() - t0) / 1000;
  await agent.close();
  return { perSecond: finished / seconds, finished, failed, seconds };
}
