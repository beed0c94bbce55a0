// Latency history over a month of 1M attempts: seeds one key's attempts with one
// INSERT … SELECT generate_series into an embedded Postgres, then times
// GET /v1/history/latency end to end (HTTP, Postgres, JSON) for typical queries.
//
//   npm run build && flock /tmp/cpu.lock node bench/latency-history.mjs
//
// Env: BENCH_ATTEMPTS (1000000), BENCH_PG_PORT (54441), BENCH_DATA_DIR (.data/bench-history).
// The seeded database is kept for the next run; delete BENCH_DATA_DIR to reseed.
import pg from 'pg';

const ATTEMPTS = Number(process.env.BENCH_ATTEMPTS ?? 1_000_000);
const KEY = 'cbk_bench_history_key_0123456789';
const DAY = 86_400_000;

/**
 * Times `GET /v1/history/latency?<qs>` end to end on a running service: `runs` calls
 * after a first one, which warms the plan cache and, for an unfiltered query, computes
 * and stores the closed buckets not stored yet (latency_rollup) that the later ones
 * read. Returns the first call's ms, the later ones' median and max, and the last body.
 */
export async function timeLatencyHistory(serviceUrl, key, qs, runs = 5) {
  const times = [];
  let body;
  let first;
  for (let i = 0; i <= runs; i++) {
    const t0 = performance.now();
    const res = await fetch(`${serviceUrl}/v1/history/latency?${qs}`, { headers: { authorization: `Bearer ${key}` } });
    body = await res.json();
    if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(body)}`);
    if (i > 0) times.push(performance.now() - t0);
    else first = performance.now() - t0;
  }
  times.sort((a, b) => a - b);
  return { first, median: times[Math.floor(times.length / 2)], max: times.at(-1), body };
}

if (import.meta.url === `file://${process.argv[1]}`) await script();

async function script() {
  const { startService } = await import('../dist/app.factory.js');
  const { loadConfig } = await import('../dist/config/app.config.js');

  const config = loadConfig(
    {},
    {
      port: 0,
      role: 'api',
      logLevel: 'error',
      bootstrapApiKey: KEY,
      dataDir: process.env.BENCH_DATA_DIR ?? '.data/bench-history',
      embeddedPgPort: Number(process.env.BENCH_PG_PORT ?? 54441),
    },
  );
  const service = await startService(config);
  const db = new pg.Client({ connectionString: service.databaseUrl });
  await db.connect();

  try {
    const {
      rows: [{ id: keyId }],
    } = await db.query('SELECT id FROM api_key ORDER BY created_at LIMIT 1');
    const {
      rows: [{ n }],
    } = await db.query('SELECT count(*)::int AS n FROM attempt');
    if (n !== ATTEMPTS) await seed(db, keyId);
    const {
      rows: [{ lo, hi }],
    } = await db.query('SELECT min(started_at) AS lo, max(started_at) AS hi FROM attempt');
    console.log(`${ATTEMPTS} attempts of one key from ${lo.toISOString()} to ${hi.toISOString()}`);
    const monthAgo = new Date(hi.getTime() - 30 * DAY).toISOString();
    const end = new Date(hi.getTime() + 1).toISOString();
    const cases = [
      ['last 24 h, default bucket (5m)', `to=${end}`],
      ['30 days, default bucket (1h)', `from=${monthAgo}&to=${end}`],
      ['30 days, bucket 1d', `from=${monthAgo}&to=${end}&bucket=1d`],
      ['30 days, one host of 20, 1h', `from=${monthAgo}&to=${end}&host=${encodeURIComponent('https://host-7.example:443')}`],
      ['7 days, bucket 5m', `from=${new Date(hi.getTime() - 7 * DAY).toISOString()}&to=${end}&bucket=5m`],
    ];
    // Each run's first reads compute the closed buckets anew (an earlier run stored them).
    await db.query('TRUNCATE latency_rollup');
    console.log('| query | buckets | attempts | first ms | median ms of the 5 after it | max ms |');
    console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
    for (const [name, qs] of cases) {
      const { first, median, max, body } = await timeLatencyHistory(service.url, KEY, qs);
      const total = body.items.reduce((s, b) => s + b.count, 0);
      console.log(`| ${name} | ${body.items.length} | ${total} | ${first.toFixed(0)} | ${median.toFixed(0)} | ${max.toFixed(0)} |`);
    }
  } finally {
    await db.end();
    await service.close();
  }
}

/** 1M attempts over the last 30 days: 20 hosts, 95% success, log-normal-ish durations. */
async function seed(db, keyId) {
  const t0 = performance.now();
  await db.query('TRUNCATE batch, callback, attempt, latency_rollup CASCADE');
  const {
    rows: [{ id: batchId }],
  } = await db.query(`INSERT INTO batch (id, api_key_id, total, created_at, completed_at) VALUES (gen_random_uuid(), $1, 1000, now(), now()) RETURNING id`, [
    keyId,
  ]);
  await db.query(
    `
    INSERT INTO callback (id, batch_id, api_key_id, url, host, method, timeout_ms, max_attempts, status, attempts, next_attempt_at, completed_at)
    SELECT gen_random_uuid(), $1, $2, 'https://host-' || (i % 20) || '.example/hook', 'https://host-' || (i % 20) || '.example:443',
           'POST', 15000, 1, 'succeeded', 1, now(), now()
    FROM generate_series(0, 999) AS i`,
    [batchId, keyId],
  );
  await db.query(
    `
    WITH cb AS (SELECT array_agg(id ORDER BY host) AS ids FROM callback)
    INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, status_code, outcome)
    SELECT cb.ids[1 + i % 1000], $1, 'https://host-' || ((i % 1000) / 50) || '.example:443', 1,
           now() - (random() * 30 * interval '1 day'),
           round((exp(random() * 3 + random() * 3) * 5)::numeric, 3)::float8,
           CASE WHEN i % 20 = 0 THEN 503 ELSE 200 END,
           CASE WHEN i % 20 = 0 THEN 'http_error' ELSE 'success' END
    FROM cb, generate_series(1, $2::int) AS i`,
    [keyId, ATTEMPTS],
  );
  await db.query('VACUUM ANALYZE attempt');
  console.log(`seeded ${ATTEMPTS} attempts in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}
