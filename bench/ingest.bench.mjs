// Ingest over HTTP on an API-only service (ROLE=api, so no dispatching shares its
// CPU): batches of 1,000 callbacks, then one-callback batches from 50 connections.
// Every request must be a 202; the stored row count is checked against what was sent.
// Baselines, same run: for the batches, the same number of rows stored straight into
// Postgres by 4 connections, 1,000 per transaction, generated inside Postgres (no HTTP,
// no parameters: the database's own floor); for single callbacks, `GET /health/live`
// from 50 connections (the framework's floor).
//   node bench/ingest.bench.mjs
import { BENCH_KEY, connect, freshDatabase, main, row, startService } from './lib/harness.mjs';
import { getLoad, postLoad } from './lib/http-load.mjs';
import { benchKeyId, seedDue } from './lib/seed.mjs';

const callback = (i) => ({ url: `http://127.0.0.1:9/hooks/${i}`, body: { order: i, note: 'ingest benchmark' }, externalId: `o-${i}` });

/** Rows/s of `total` rows stored straight into Postgres, `perTransaction` at a time, from `connections` connections. */
async function storeDirectly(databaseUrl, { connections, total, perTransaction }) {
  const clients = await Promise.all(Array.from({ length: connections }, () => connect(databaseUrl)));
  try {
    const keyId = await benchKeyId(clients[0]);
    let left = total / perTransaction;
    const t0 = performance.now();
    await Promise.all(
      clients.map(async (db) => {
        while (left-- > 0) await seedDue(db, keyId, ['http://127.0.0.1:9/hooks'], perTransaction);
      }),
    );
    return total / ((performance.now() - t0) / 1000);
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
}

export async function ingestScenario(databaseUrl) {
  const service = await startService(databaseUrl, { ROLE: 'api' });
  const db = await connect(databaseUrl);
  const auth = { authorization: `Bearer ${BENCH_KEY}` };
  const big = JSON.stringify({ label: 'bench', callbacks: Array.from({ length: 1000 }, (_, i) => callback(i)) });
  const one = JSON.stringify({ callbacks: [callback(0)] });
  try {
    await postLoad(service.url, { path: '/v1/batches', connections: 4, total: 10, seconds: 10, body: () => big, headers: auth }); // warm-up
    await postLoad(service.url, { path: '/v1/batches', connections: 50, total: 500, seconds: 10, body: () => one, headers: auth });
    const before = Number((await db.query('SELECT count(*) FROM callback')).rows[0].count);
    const batches = await postLoad(service.url, { path: '/v1/batches', connections: 4, total: 60, seconds: 30, body: () => big, headers: auth });
    const singles = await postLoad(service.url, { path: '/v1/batches', connections: 50, total: 30_000, seconds: 8, body: () => one, headers: auth });
    const stored = Number((await db.query('SELECT count(*) FROM callback')).rows[0].count) - before;
    const expected = batches.ok * 1000 + singles.ok;
    if (stored !== expected) throw new Error(`stored ${stored} callbacks, expected ${expected}`);
    const direct = await storeDirectly(databaseUrl, { connections: 4, total: batches.ok * 1000, perTransaction: 1000 });
    const floor = await getLoad(service.url, { paths: () => '/health/live', seconds: 4 });
    return [
      row(
        'ingest: batches of 1,000 over HTTP, stored (4 connections, ROLE=api; baseline: the same rows stored straight into Postgres)',
        batches.perSecond * 1000,
        'callbacks/s',
        { baseline: direct, target: 30_000 },
      ),
      row('ingest: one-callback batches (50 connections, ROLE=api; baseline: GET /health/live)', singles.perSecond, 'req/s', { baseline: floor, target: 3000 }),
    ];
  } finally {
    await db.end();
    await service.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(async (server) => ingestScenario(await freshDatabase(server, 'bench_ingest')));
}
