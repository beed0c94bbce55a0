// Load generators for the API benchmarks: a fixed number of keep-alive connections,
// each sending its next request as soon as the last one is answered.
import { Pool } from 'undici';

/**
 * Runs `send(pool, i)` from `connections` connections until `total` requests have
 * started or `seconds` pass. Resolves with the requests started and the seconds taken.
 */
async function keepBusy(url, { connections, total, seconds }, send) {
  const pool = new Pool(url, { connections, pipelining: 1 });
  const until = performance.now() + seconds * 1000;
  let started = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (started < total && performance.now() < until) await send(pool, started++);
  };
  try {
    await Promise.all(Array.from({ length: connections }, worker));
    return { started, seconds: (performance.now() - t0) / 1000 };
  } finally {
    await pool.close();
  }
}

/** Fires `body()` POSTs from `connections` connections until `total` are done or `seconds` pass; all must be 202. */
export async function postLoad(url, { path, connections, total, seconds, body, headers = {} }) {
  let ok = 0;
  const failures = new Map();
  const run = await keepBusy(url, { connections, total, seconds }, async (pool) => {
    const res = await pool.request({ path, method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: body() });
    const text = await res.body.text();
    if (res.statusCode === 202) ok++;
    else failures.set(res.statusCode, text.slice(0, 200));
  });
  if (failures.size > 0) throw new Error(`non-202 answers: ${JSON.stringify([...failures])}`);
  return { ok, perSecond: ok / run.seconds, seconds: run.seconds };
}

/** GETs `paths(i)` from `connections` connections for `seconds` (or `total` requests); all must be 200. Requests/s. */
export async function getLoad(url, { paths, headers = {}, connections = 50, seconds = 6, total = 100_000 }) {
  let done = 0;
  const run = await keepBusy(url, { connections, total, seconds }, async (pool, i) => {
    const res = await pool.request({ path: paths(i), method: 'GET', headers });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`GET answered ${res.statusCode}: ${text.slice(0, 200)}`);
    done++;
  });
  return done / run.seconds;
}
