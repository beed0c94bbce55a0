// Reading one batch must not slow with the history around it: GET /v1/batches/{id}
// (counts and makespan) and its timeline (GET /v1/batches/{id}/sequence?format=json)
// of a batch of 10,000 callbacks and of one of 100, each callback with two attempts
// (a 500, then a 200); nor must the reads of what is recent: the first page of the
// callbacks stored since a day ago (GET /v1/callbacks?since=, 100) and the last day's
// latency (GET /v1/history/latency); on a database that also holds BENCH_BATCH_READ_ROWS (3M)
// finished callbacks and their attempts over 30 days in the service's time partitions,
// against the same two batches on a database holding nothing else (baseline), same
// run: one API service on each (ROLE=api), the reads alternated between them, the
// median of BENCH_BATCH_READ_N (15) each after three of warm-up. The history is seeded
// once per server and kept (bench_batch_read_history), as bench:flat keeps its own.
//   node bench/batch-read.bench.mjs   (DATABASE_URL for a stock server)
import { BENCH_KEY, connect, databaseExists, freshDatabase, main, median, row, startService } from './lib/harness.mjs';
import { benchKeyId, seedHistory } from './lib/seed.mjs';

const ROWS = Number(process.env.BENCH_BATCH_READ_ROWS ?? 3_000_000);
const READS = Number(process.env.BENCH_BATCH_READ_N ?? 15);
const SIZES = [10_000, 100];

/** A batch of `n` callbacks stored ten minutes ago, finished, each with a 500 and then a 200 (the service's migrations applied, the bench key made). */
async function seedBatch(db, keyId, n) {
  const { rows } = await db.query(
    `INSERT INTO batch (id, api_key_id, label, total, created_at, completed_at)
     VALUES (gen_random_uuid(), $1, 'read', $2, now() - interval '10 minutes', now() - interval '8 minutes') RETURNING id`,
    [keyId, n],
  );
  await db.query(
    `WITH c AS (
       INSERT INTO callback (id, batch_id, api_key_id, url, host, method, headers, body, timeout_ms, max_attempts, status, attempts,
                             next_attempt_at, last_status_code, created_at, completed_at, done_at)
       SELECT gen_random_uuid(), $2, $1, 'http://127.0.0.1:9/read', 'http://127.0.0.1:9', 'POST', '{}', '{"n":' || i || '}', 15000, 8,
              'succeeded', 2, now(), 200, now() - interval '10 minutes', now() - interval '8 minutes', now() - interval '8 minutes'
       FROM generate_series(1, $3::int) i RETURNING id
     )
     INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, dns_ms, connect_ms, first_byte_ms,
                          status_code, outcome, response_headers, response_body, worker)
     SELECT c.id, $1, 'http://127.0.0.1:9', a.n, now() - interval '10 minutes' + a.n * interval '30 seconds', 12.5, 0, 0.3, 12.1,
            CASE a.n WHEN 1 THEN 500 ELSE 200 END, CASE a.n WHEN 1 THEN 'http_error' ELSE 'success' END, '{"content-type":"text/plain"}', 'ok', 'seed'
     FROM c CROSS JOIN generate_series(1, 2) a(n)`,
    [keyId, rows[0].id, n],
  );
  return rows[0].id;
}

/**
 * The database `name` with an API service on it (which migrated it and made the bench
 * key), with the history when `history` (seeded once, kept), and the batches read
 * (made afresh). The service is stopped if the seeding fails.
 */
async function prepare(server, name, history) {
  const url = history && (await databaseExists(server, name)) ? server.serverUrl(name) : await freshDatabase(server, name);
  const service = await startService(url, { ROLE: 'api' });
  const db = await connect(url);
  try {
    const keyId = await benchKeyId(db);
    if (history) await seedHistory(db, keyId, ROWS);
    await db.query(`DELETE FROM attempt WHERE callback_id IN (SELECT id FROM callback WHERE batch_id IN (SELECT id FROM batch WHERE label = 'read'))`);
    await db.query(`DELETE FROM callback WHERE batch_id IN (SELECT id FROM batch WHERE label = 'read')`);
    await db.query(`DELETE FROM batch WHERE label = 'read'`);
    const ids = [];
    for (const n of SIZES) ids.push(await seedBatch(db, keyId, n));
    await db.query('ANALYZE callback');
    await db.query('ANALYZE attempt');
    return { service, ids };
  } catch (error) {
    await service.stop();
    throw error;
  } finally {
    await db.end();
  }
}

async function timedGet(service, path) {
  const started = performance.now();
  const res = await fetch(service.url + path, { headers: { authorization: `Bearer ${BENCH_KEY}` } });
  const text = await res.text();
  const ms = performance.now() - started;
  if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${text.slice(0, 300)}`);
  return { ms, text };
}

export async function batchReadScenario(server) {
  const empty = await prepare(server, 'bench_batch_read_empty', false);
  const services = [empty.service];
  try {
    const full = await prepare(server, 'bench_batch_read_history', true);
    services.push(full.service);
    const reads = SIZES.flatMap((n, k) => [
      { n, what: 'GET /v1/batches/{id}', path: (ids) => `/v1/batches/${ids[k]}` },
      { n, what: 'its timeline (/sequence?format=json)', path: (ids) => `/v1/batches/${ids[k]}/sequence?format=json` },
    ]);
    const since = new Date(Date.now() - 86_400_000).toISOString();
    reads.push(
      { what: 'GET /v1/callbacks?since= (a day ago; the first page of 100)', path: () => `/v1/callbacks?since=${since}&limit=100` },
      { what: "GET /v1/history/latency (the last day, 5-minute buckets; the history's attempts of that day besides)", path: () => '/v1/history/latency' },
    );
    const results = [];
    for (const read of reads) {
      const times = [[], []];
      const answers = [];
      for (let i = 0; i < 3 + READS; i++) {
        // alternated, the order swapped every read
        for (const side of i % 2 === 0 ? [0, 1] : [1, 0]) {
          const { ms, text } = await timedGet(services[side], read.path(side === 0 ? empty.ids : full.ids));
          if (i >= 3) times[side].push(ms);
          answers[side] = text;
        }
      }
      if (read.n === undefined) {
        const [a, b] = answers.map((t) => JSON.parse(t));
        if (read.what.includes('callbacks') && (a.items.length !== 100 || b.items.length !== 100))
          throw new Error(`pages of ${a.items.length} and ${b.items.length} callbacks since, not 100`);
      } else if (read.what.startsWith('GET')) {
        const [a, b] = answers.map((t) => JSON.parse(t));
        for (const [side, answer] of [a, b].entries()) {
          if (answer.counts.succeeded !== read.n || Math.abs(answer.makespanMs - 30_012.5) > 1)
            throw new Error(`side ${side}: counts ${JSON.stringify(answer.counts)}, makespanMs ${answer.makespanMs}`);
        }
      } else if (answers[0].length !== answers[1].length) throw new Error(`timelines of ${answers[0].length} and ${answers[1].length} bytes`);
      results.push({ ...read, full: median(times[1]), empty: median(times[0]) });
    }
    const rowsText = `${(ROWS / 1_000_000).toLocaleString('en-US')}M`;
    return results.map((r, i) =>
      row(
        i === 0
          ? `${r.what} of a batch of ${r.n.toLocaleString('en-US')} callbacks (2 attempts each) among ${rowsText} finished callbacks, median of ${READS} (baseline: the same batch on a database without the history, same run, alternated)`
          : r.n === undefined
            ? r.what
            : `${r.what === 'GET /v1/batches/{id}' ? r.what : `  ${r.what}`}, ${r.n.toLocaleString('en-US')} callbacks`,
        r.full,
        'ms',
        { baseline: r.empty, higherIsBetter: false },
      ),
    );
  } finally {
    for (const s of services) await s.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(batchReadScenario);
}
