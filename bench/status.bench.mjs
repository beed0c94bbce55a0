// Status reads `GET /v1/callbacks/:id` (with attempts) with a million finished
// callbacks and a million attempts in the tables, from 50 connections, against
// `GET /health/live` on the same server in the same run (the framework's floor).
// Also the list people read while fixing an endpoint, a page of 100 failed callbacks
// (`GET /v1/callbacks?status=failed`, one in a thousand of the million failed) from
// cursors spread over them.
//   node bench/status.bench.mjs
import { BENCH_KEY, connect, main, row, startService } from './lib/harness.mjs';
import { getLoad } from './lib/http-load.mjs';
import { millionRowsDatabase } from './lib/million.mjs';

/**
 * On the million-row history, or on `databaseUrl` (a history database, million.mjs)
 * with `label` for its size. `firstPage` also reads the first page of failed callbacks
 * (no cursor, as the dashboard opens the list) and returns the floor as a row of its own.
 */
export async function statusScenario(server, { databaseUrl, label = '1M rows', firstPage = false } = {}) {
  databaseUrl ??= await millionRowsDatabase(server);
  // The per-key rate limit (10,000 requests/s by default) off: this measures the read
  // path, and 50 connections of one key went past the limit on a fast hour (429s).
  const service = await startService(databaseUrl, { ROLE: 'api', API_RATE_LIMIT_PER_SEC: '0' });
  const db = await connect(databaseUrl);
  try {
    const { rows } = await db.query(`SELECT id FROM callback TABLESAMPLE SYSTEM (1) WHERE status = 'succeeded' LIMIT 2000`);
    const ids = rows.map((r) => r.id);
    const one = JSON.parse(await (await fetch(`${service.url}/v1/callbacks/${ids[0]}`, { headers: { authorization: `Bearer ${BENCH_KEY}` } })).text());
    if (one.attempts?.length !== 1) throw new Error(`expected a callback with its attempt, got ${JSON.stringify(one).slice(0, 300)}`);
    const headers = { authorization: `Bearer ${BENCH_KEY}` };
    await getLoad(service.url, { paths: () => '/health/live', seconds: 2 }); // warm-up
    await getLoad(service.url, { paths: (i) => `/v1/callbacks/${ids[i % ids.length]}`, headers, seconds: 2 });
    const floor = await getLoad(service.url, { paths: () => '/health/live' });
    const status = await getLoad(service.url, { paths: (i) => `/v1/callbacks/${ids[(i * 7919) % ids.length]}`, headers });
    const failed = (await db.query(`SELECT id FROM callback WHERE status = 'failed' ORDER BY id`)).rows.map((r) => r.id).slice(0, -100);
    if (failed.length === 0) throw new Error('the million-row database has no failed callbacks to list');
    const page = (i) => `/v1/callbacks?status=failed&limit=100&cursor=${failed[(i * 7919) % failed.length]}`;
    const listed = await (await fetch(`${service.url}${page(0)}`, { headers })).json();
    if (listed.items?.length !== 100 || listed.items.some((c) => c.status !== 'failed'))
      throw new Error(`expected 100 failed callbacks, got ${JSON.stringify(listed).slice(0, 300)}`);
    await getLoad(service.url, { paths: page, headers, seconds: 2 });
    const lists = await getLoad(service.url, { paths: page, headers });
    const results = [
      row(`status reads GET /v1/callbacks/:id, ${label} (50 connections; baseline GET /health/live)`, status, 'req/s', { baseline: floor, target: 5000 }),
      row(`  pages of 100 failed callbacks GET /v1/callbacks?status=failed, ${label}, 0.1% failed (same baseline)`, lists, 'req/s', { baseline: floor }),
    ];
    if (firstPage) {
      const first = () => '/v1/callbacks?status=failed&limit=100';
      await getLoad(service.url, { paths: first, headers, seconds: 2 });
      const firsts = await getLoad(service.url, { paths: first, headers });
      results.push(row(`  first page of 100 failed callbacks GET /v1/callbacks?status=failed, ${label} (same baseline)`, firsts, 'req/s', { baseline: floor }));
    }
    return results;
  } finally {
    await db.end();
    await service.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(statusScenario);
}
