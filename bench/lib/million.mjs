import { connect, databaseExists, freshDatabase, startService } from './harness.mjs';
import { benchKeyId, seedHistory } from './seed.mjs';

/** The history database's name on the bench server: bench_million for a million rows (the default), bench_10m for ten million. */
const nameOf = (rows) => (rows === 1_000_000 ? 'bench_million' : rows % 1_000_000 === 0 ? `bench_${rows / 1_000_000}m` : `bench_${rows}`);

/**
 * A database holding `rows` finished callbacks with their attempts over the last 30
 * days, in the service's time partitions (seed.mjs, seedHistory), made once and kept
 * on the bench server for later runs (under .data/bench with the embedded one): a
 * million in about a minute, ten million in about ten. The service is started on it
 * once so it is migrated and has the bench key. What earlier runs added on top of the
 * seeded history is removed first, so every run measures the same rows rather than a
 * table that grows by each run's callbacks; a slot a run dropped, or one the 30 days
 * moved past, is seeded again. A database seeded before the history was partitioned
 * (finished rows in the queue's partition) is made again.
 */
export async function historyDatabase(server, rows = 1_000_000) {
  const name = nameOf(rows);
  let url = (await databaseExists(server, name)) ? server.serverUrl(name) : await freshDatabase(server, name);
  const service = await startService(url, { ROLE: 'api' });
  await service.stop();
  let db = await connect(url);
  try {
    if ((await db.query(`SELECT EXISTS (SELECT 1 FROM callback WHERE done_at = 'infinity' AND status IN ('succeeded', 'failed')) AS old`)).rows[0].old) {
      await db.end();
      url = await freshDatabase(server, name);
      await (await startService(url, { ROLE: 'api' })).stop();
      db = await connect(url);
    }
    await trimToHistory(db);
    // The history's stored latency buckets (latency_rollup) go: each run's first history read computes them anew.
    await db.query('TRUNCATE latency_rollup');
    const t0 = performance.now();
    const seeded = await seedHistory(db, await benchKeyId(db), rows);
    if (seeded > 0)
      console.error(`seeded ${seeded} of 10 slots of ${rows.toLocaleString('en-US')} finished callbacks in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  } finally {
    await db.end();
  }
  return url;
}

/** The million-row history database (bench:status, bench:flat's default). */
export const millionRowsDatabase = (server) => historyDatabase(server, 1_000_000);

/** Deletes the batches (and with them their callbacks and attempts) that are not the seeded history. */
export async function trimToHistory(db) {
  const { rowCount } = await db.query(`DELETE FROM batch WHERE label IS DISTINCT FROM 'history'`); // cascades
  if (rowCount === 0) return;
  await db.query('VACUUM ANALYZE callback');
  await db.query('VACUUM ANALYZE attempt');
  await db.query('VACUUM ANALYZE batch');
}
