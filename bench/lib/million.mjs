import { connect, databaseExists, freshDatabase, startService } from './harness.mjs';
import { benchKeyId, seedFinished } from './seed.mjs';

const NAME = 'bench_million';

/**
 * A database holding a million finished callbacks with their attempts, made once
 * (about a minute) and kept on the bench server for later runs. The service is
 * started on it once so it is migrated and has the bench key. What earlier runs
 * added on top of the seeded history is removed first, so every run measures the
 * same million rows rather than a table that grows by each run's callbacks.
 */
export async function millionRowsDatabase(server) {
  const exists = await databaseExists(server, NAME);
  const url = exists ? server.serverUrl(NAME) : await freshDatabase(server, NAME);
  const service = await startService(url, { ROLE: 'api' });
  await service.stop();
  const db = await connect(url);
  try {
    await trimToHistory(db);
    const t0 = performance.now();
    if (await seedFinished(db, await benchKeyId(db))) console.error(`seeded a million finished callbacks in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  } finally {
    await db.end();
  }
  return url;
}

/** Deletes the batches (and with them their callbacks and attempts) that are not the seeded history. */
async function trimToHistory(db) {
  const { rowCount } = await db.query(`DELETE FROM batch WHERE label IS DISTINCT FROM 'history'`); // cascades
  if (rowCount === 0) return;
  await db.query('VACUUM ANALYZE callback');
  await db.query('VACUUM ANALYZE attempt');
  await db.query('VACUUM ANALYZE batch');
}
