// How long the migration that partitions the history takes on a filled database
// (docs/operations.md, "Postgres"): a database migrated to the schema before it,
// BENCH_ROWS finished callbacks with an attempt each (a month old) and 10,000 pending,
// then the migration, timed; while it runs, a client inserts a callback every 10 ms
// and the longest wait of one insert is printed (what an ingest saw).
//   npm run build && npm run bench:history-migration     (BENCH_ROWS 1000000; DATABASE_URL for another server)
import { connect, distModule, freshDatabase, main, row } from './lib/harness.mjs';
import { seedFinished } from './lib/seed.mjs';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const PARTITIONING = '20261203185000_history_partitions_prepare';

export async function historyMigrationScenario(server) {
  const { migrate, readMigrations } = await distModule('database/migrator.js');
  const url = await freshDatabase(server, 'bench_history_migration');
  const all = readMigrations();
  await migrate(
    url,
    all.slice(
      0,
      all.findIndex((m) => m.name === PARTITIONING),
    ),
  );
  const db = await connect(url);
  const writer = await connect(url);
  try {
    const key = (await db.query(`INSERT INTO api_key (id, name, prefix, hash) VALUES (gen_random_uuid(), 'b', 'pb', md5(random()::text)) RETURNING id`)).rows[0]
      .id;
    const t0 = performance.now();
    await seedFinished(db, key, ROWS);
    const batch = (await db.query(`INSERT INTO batch (id, api_key_id, total) VALUES (gen_random_uuid(), $1, 0) RETURNING id`, [key])).rows[0].id;
    const insert = () =>
      writer.query(
        `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, timeout_ms, max_attempts, status, next_attempt_at)
         SELECT gen_random_uuid(), $1, $2, 'http://127.0.0.1:9/p', 'http://127.0.0.1:9', 'POST', 5000, 3, 'pending', now() + interval '1 day'
         FROM generate_series(1, $3::int)`,
        [batch, key, 1],
      );
    await db.query(
      `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, timeout_ms, max_attempts, status, next_attempt_at)
       SELECT gen_random_uuid(), $1, $2, 'http://127.0.0.1:9/p', 'http://127.0.0.1:9', 'POST', 5000, 3, 'pending', now() + interval '1 day'
       FROM generate_series(1, 10000)`,
      [batch, key],
    );
    console.error(`seeded ${ROWS.toLocaleString('en-US')} finished callbacks in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    let longest = 0;
    let stop = false;
    const ingest = (async () => {
      while (!stop) {
        const s = performance.now();
        await insert();
        longest = Math.max(longest, performance.now() - s);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    const started = performance.now();
    await migrate(url);
    const ms = performance.now() - started;
    stop = true;
    await ingest;
    const n = (await db.query(`SELECT count(*)::int AS n FROM callback`)).rows[0].n;
    return [
      row(
        `history partitioning migration over ${ROWS.toLocaleString('en-US')} finished callbacks with their attempts (${n.toLocaleString('en-US')} rows after)`,
        ms,
        'ms',
        {
          higherIsBetter: false,
        },
      ),
      row('  per million callbacks', (ms * 1_000_000) / ROWS, 'ms', { higherIsBetter: false }),
      row('  longest wait of one insert meanwhile (one every 10 ms)', longest, 'ms', { higherIsBetter: false }),
    ];
  } finally {
    await writer.end();
    await db.end();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(async (server) => historyMigrationScenario(server));
}
