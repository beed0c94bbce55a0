import { connect, databaseExists, freshDatabase, startService } from './harness.mjs';
import { benchKeyId, seedFinished } from './seed.mjs';

const NAME = 'bench_million';

/**
 * A database holding a million finished callbacks with their attempts, made once
 * (about a minute) and kept on the bench server for later runs. The service is
 * started on it once so it is migrated and has the bench key.
 */
export async function millionRowsDatabase(server) {
  const exists = await databaseExists(server, NAME);
  const url = exists ? server.serverUrl(NAME) : await freshDatabase(server, NAME);
  const service = await startService(url, { ROLE: 'api' });
  await service.stop();
  const db = await connect(url);
  try {
    const t0 = performance.now();
    if (await seedFinished(db, await benchKeyId(db))) console.error(`seeded a million finished callbacks in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  } finally {
    await db.end();
  }
  return url;
}
