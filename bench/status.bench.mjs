// Status reads `GET /v1/callbacks/:id` (with attempts) with a million finished
// callbacks and a million attempts in the tables, from 50 connections, against
// `GET /health/live` on the same server in the same run (the framework's floor).
//   node bench/status.bench.mjs
import { Pool } from 'undici';
import { BENCH_KEY, connect, main, row, startService } from './lib/harness.mjs';
import { millionRowsDatabase } from './lib/million.mjs';

/** GETs `paths()` from `connections` connections for `seconds` (or `total` requests); all must be 200. */
async function reads(url, { paths, connections = 50, seconds = 6, total = 100_000 }) {
  const pool = new Pool(url, { connections, pipelining: 1 });
  const headers = { authorization: `Bearer ${BENCH_KEY}` };
  const until = performance.now() + seconds * 1000;
  let done = 0;
  let i = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (done < total && performance.now() < until) {
      const res = await pool.request({ path: paths(i++), method: 'GET', headers });
      const text = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`GET answered ${res.statusCode}: ${text.slice(0, 200)}`);
      done++;
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  const perSecond = done / ((performance.now() - t0) / 1000);
  await pool.close();
  return perSecond;
}

export async function statusScenario(server) {
  const databaseUrl = await millionRowsDatabase(server);
  const service = await startService(databaseUrl, { ROLE: 'api' });
  const db = await connect(databaseUrl);
  try {
    const { rows } = await db.query(`SELECT id FROM callback TABLESAMPLE SYSTEM (1) WHERE status = 'succeeded' LIMIT 2000`);
    const ids = rows.map((r) => r.id);
    const one = JSON.parse(await (await fetch(`${service.url}/v1/callbacks/${ids[0]}`, { headers: { authorization: `Bearer ${BENCH_KEY}` } })).text());
    if (one.attempts?.length !== 1) throw new Error(`expected a callback with its attempt, got ${JSON.stringify(one).slice(0, 300)}`);
    await reads(service.url, { paths: () => '/health/live', seconds: 2 }); // warm-up
    await reads(service.url, { paths: (i) => `/v1/callbacks/${ids[i % ids.length]}`, seconds: 2 });
    const floor = await reads(service.url, { paths: () => '/health/live' });
    const status = await reads(service.url, { paths: (i) => `/v1/callbacks/${ids[(i * 7919) % ids.length]}` });
    return [row('status reads GET /v1/callbacks/:id, 1M rows (50 connections; baseline GET /health/live)', status, 'req/s', { baseline: floor, target: 5000 })];
  } finally {
    await db.end();
    await service.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(statusScenario);
}
