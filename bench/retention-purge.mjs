// Retention purge against dispatch: the same dispatch run (N due rows → sent →
// persisted) on a database holding 300k finished callbacks a month old, once with
// the purge off and once with the purge deleting them meanwhile, so the difference
// is what the purge costs dispatch.
//   npm run build && flock /tmp/cpu.lock node bench/retention-purge.mjs
// Env: BENCH_N (20000), BENCH_OLD_ROWS (300000); BENCH_DATA_DIR / BENCH_PG_PORT as in bench/lib/harness.mjs.
import { setTimeout as sleep } from 'node:timers/promises';
import { timeDispatch, dispatchEnv } from './dispatch.bench.mjs';
import { connect, freshDatabase, main, row, startService } from './lib/harness.mjs';
import { BenchReceiver } from './lib/receiver.mjs';
import { benchKeyId, seedFinished } from './lib/seed.mjs';

const N = Number(process.env.BENCH_N ?? 20_000);
const OLD = Number(process.env.BENCH_OLD_ROWS ?? 300_000);
const WINDOW = 200;
const oldCount = async (db) => (await db.query(`SELECT count(*)::int AS n FROM callback WHERE completed_at < now() - interval '1 day'`)).rows[0].n;

await main(async (server) => {
  const databaseUrl = await freshDatabase(server, 'bench_retention');
  const receiver = await BenchReceiver.start();
  const rows = [];
  const run = async (label, env, prepare) => {
    const service = await startService(databaseUrl, { ...dispatchEnv(WINDOW), ...env });
    const db = await connect(databaseUrl);
    try {
      await prepare?.(db);
      await timeDispatch(db, receiver, 2_000); // warm the send path and plans
      await receiver.reset();
      const before = await oldCount(db);
      const result = await timeDispatch(db, receiver, N);
      const purged = before - (await oldCount(db));
      rows.push(row(`dispatch ${N.toLocaleString('en-US')} rows, ${label}`, result.perSecond, 'calls/s'));
      if (env.RETENTION_HOURS !== '0') rows.push(row(`  old rows purged during that run (${result.seconds.toFixed(1)} s)`, purged, 'callbacks'));
    } finally {
      await db.end();
      await service.stop();
    }
  };
  await run(`${OLD.toLocaleString('en-US')} old finished rows kept (purge off)`, { RETENTION_HOURS: '0' }, async (db) => {
    await seedFinished(db, await benchKeyId(db), OLD);
  });
  await run(
    'the purge deleting them meanwhile (1000 rows per statement, 100 ms pause)',
    {
      RETENTION_HOURS: '24',
      RETENTION_PURGE_INTERVAL_MS: '100',
      RETENTION_PURGE_BATCH: '1000',
      RETENTION_PURGE_PAUSE_MS: '100',
    },
    async () => sleep(300),
  );
  await receiver.close();
  return rows;
});
