// Ingest over HTTP on an API-only service (ROLE=api, so no dispatching shares its
// CPU): batches of 1,000 callbacks, then one-callback batches from 50 connections.
// Every request must be a 202; the stored row count is checked against what was sent.
//   node bench/ingest.bench.mjs
import { Pool } from 'undici';
import { BENCH_KEY, connect, freshDatabase, main, row, startService } from './lib/harness.mjs';

/** Fires `body()` POSTs from `connections` connections until `total` are done or `seconds` pass. */
export async function load(url, { path, connections, total, seconds, body, headers = {} }) {
  const pool = new Pool(url, { connections, pipelining: 1 });
  const until = performance.now() + seconds * 1000;
  let started = 0;
  let ok = 0;
  const failures = new Map();
  const t0 = performance.now();
  const worker = async () => {
    while (started < total && performance.now() < until) {
      started++;
      const res = await pool.request({ path, method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: body() });
      const text = await res.body.text();
      if (res.statusCode === 202) ok++;
      else failures.set(res.statusCode, text.slice(0, 200));
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  const elapsed = (performance.now() - t0) / 1000;
  await pool.close();
  if (failures.size > 0) throw new Error(`non-202 answers: ${JSON.stringify([...failures])}`);
  return { ok, perSecond: ok / elapsed, seconds: elapsed };
}

const callback = (i) => ({ url: `http://127.0.0.1:9/hooks/${i}`, body: { order: i, note: 'ingest benchmark' }, externalId: `o-${i}` });

export async function ingestScenario(databaseUrl) {
  const service = await startService(databaseUrl, { ROLE: 'api' });
  const db = await connect(databaseUrl);
  const auth = { authorization: `Bearer ${BENCH_KEY}` };
  const big = JSON.stringify({ label: 'bench', callbacks: Array.from({ length: 1000 }, (_, i) => callback(i)) });
  const one = JSON.stringify({ callbacks: [callback(0)] });
  try {
    await load(service.url, { path: '/v1/batches', connections: 4, total: 10, seconds: 10, body: () => big, headers: auth }); // warm-up
    await load(service.url, { path: '/v1/batches', connections: 50, total: 500, seconds: 10, body: () => one, headers: auth });
    const before = Number((await db.query('SELECT count(*) FROM callback')).rows[0].count);
    const batches = await load(service.url, { path: '/v1/batches', connections: 4, total: 60, seconds: 30, body: () => big, headers: auth });
    const singles = await load(service.url, { path: '/v1/batches', connections: 50, total: 30_000, seconds: 8, body: () => one, headers: auth });
    const stored = Number((await db.query('SELECT count(*) FROM callback')).rows[0].count) - before;
    const expected = batches.ok * 1000 + singles.ok;
    if (stored !== expected) throw new Error(`stored ${stored} callbacks, expected ${expected}`);
    return [
      row('ingest: batches of 1,000 over HTTP, stored (4 connections, ROLE=api)', batches.perSecond * 1000, 'callbacks/s', { target: 30_000 }),
      row('ingest: one-callback batches (50 connections, ROLE=api)', singles.perSecond, 'req/s', { target: 3000 }),
    ];
  } finally {
    await db.end();
    await service.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(async (server) => ingestScenario(await freshDatabase(server, 'bench_ingest')));
}
