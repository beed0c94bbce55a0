// The figures behind the history layout (issue: months of traffic): what a callback's
// life costs Postgres with today's one `callback` table purged row by row, against the
// same table partitioned by when a row finished: unfinished rows (done_at = 'infinity')
// in a partition of their own, which is then the queue, and finished ones moved by the
// write-back into time partitions that retention drops whole. Attempts alike, by
// started_at. Both layouts carry the service's own columns, indexes and triggers (the
// script copies them from a migrated database), and do the same statements in the
// same order; rounds alternate.
//
// Per round and layout: N callbacks inserted (ingest), claimed 500 at a time, written
// back 500 at a time with one attempt each, then purged: today's purge statement
// (1000 rows, FOR UPDATE SKIP LOCKED, attempts by its trigger) against DETACH
// PARTITION … CONCURRENTLY and DROP TABLE; then VACUUM, since dead rows are part of the
// bill. Each phase: Postgres CPU (every server process, /proc schedstat), WAL bytes, time.
//
//   npm run build && npm run bench:history-layout     (BENCH_N 50000, BENCH_ROUNDS 2; DATABASE_URL for another server)
import { postgresRunNs } from './lib/cpu.mjs';
import { backendPidOf, connect, distModule, freshDatabase, main, row } from './lib/harness.mjs';

const N = Number(process.env.BENCH_N ?? 50_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CHUNK = 500;
const PURGE_CHUNK = 1000;
/** The first migration of the history's partitioning: the schema before it is the one compared. */
const PARTITIONING = '20261203185000_history_partitions_prepare';

/** Makes `<table>_p`: `table` partitioned by RANGE (`key`), with its indexes and triggers, and for callbacks the partition of `done_at = 'infinity'` (the queue). */
async function partitionedCopy(db, table, key, { addDoneAt }) {
  const p = `${table}_p`;
  await db.query(`DROP TABLE IF EXISTS ${p} CASCADE`);
  await db.query(
    `CREATE TABLE ${p} (LIKE ${table} INCLUDING DEFAULTS${addDoneAt ? `, done_at timestamptz NOT NULL DEFAULT 'infinity'` : ''}) PARTITION BY RANGE (${key})`,
  );
  const { rows: indexes } = await db.query(`SELECT indexname, indexdef FROM pg_indexes WHERE tablename = $1 AND indexname <> $2`, [table, `${table}_pkey`]);
  await db.query(`ALTER TABLE ${p} ADD PRIMARY KEY (id, ${key})`);
  for (const { indexname, indexdef } of indexes) {
    await db.query(indexdef.replace(`INDEX ${indexname} ON public.${table} `, `INDEX ${indexname}_p ON public.${p} `));
  }
  const { rows: triggers } = await db.query(
    `SELECT pg_get_triggerdef(t.oid) AS def, t.tgname FROM pg_trigger t WHERE t.tgrelid = $1::regclass AND NOT t.tgisinternal`,
    [table],
  );
  for (const { def, tgname } of triggers) {
    if (tgname === 'callback_attempts_delete') continue; // attempts go with their partitions
    await db.query(def.replace(`TRIGGER ${tgname} `, `TRIGGER ${tgname}_p `).replace(` ON public.${table} `, ` ON public.${p} `));
  }
  // not a DEFAULT partition: with one, DETACH … CONCURRENTLY is refused and every new partition scans it
  if (addDoneAt) await db.query(`CREATE TABLE ${p}_live PARTITION OF ${p} FOR VALUES FROM ('infinity') TO (MAXVALUE)`);
}

async function measure(db, pid, fn) {
  const lsn = async () => (await db.query('SELECT pg_current_wal_lsn() AS l')).rows[0].l;
  const walBefore = await lsn();
  const cpuBefore = postgresRunNs(pid);
  const t = performance.now();
  await fn();
  const ms = performance.now() - t;
  const cpuUs = (postgresRunNs(pid) - cpuBefore) / 1000;
  const wal = Number((await db.query('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::float8 AS b', [walBefore])).rows[0].b);
  return { ms, cpuUs, wal };
}

/** One callback's life in `layout` ('today' or 'partitioned'): phases and their costs. */
async function round(db, pid, layout, keyId, batchId, n) {
  const partitioned = layout === 'partitioned';
  const cb = partitioned ? 'callback_p' : 'callback';
  const at = partitioned ? 'attempt_p' : 'attempt';
  const live = partitioned ? `AND done_at = 'infinity'` : '';
  const tag = `r${Date.now()}`;
  if (partitioned) {
    // the round's time partitions (made ahead by the leader in the real thing)
    await db.query(`CREATE TABLE callback_p_${tag} PARTITION OF callback_p FOR VALUES FROM (now() - interval '1 minute') TO (now() + interval '1 day')`);
    await db.query(`CREATE TABLE attempt_p_${tag} PARTITION OF attempt_p FOR VALUES FROM (now() - interval '1 minute') TO (now() + interval '1 day')`);
  }
  const phases = {};
  phases.ingest = await measure(db, pid, async () => {
    for (let from = 0; from < n; from += CHUNK) {
      await db.query(
        `INSERT INTO ${cb} (id, batch_id, api_key_id, url, host, method, headers, body, timeout_ms, max_attempts, status, next_attempt_at)
         SELECT gen_random_uuid(), $1, $2, 'http://127.0.0.' || (1 + g % 50) || ':9/hook', 'http://127.0.0.' || (1 + g % 50) || ':9', 'POST', '{}',
                '{"event":"layout","n":' || g || '}', 15000, 8, 'pending', now()
         FROM generate_series($3::int, $4::int) g`,
        [batchId, keyId, from, Math.min(n, from + CHUNK) - 1],
      );
    }
  });
  const ids = [];
  phases.claim = await measure(db, pid, async () => {
    for (;;) {
      const { rows } = await db.query(
        `UPDATE ${cb} c SET status = 'in_flight', lease_owner = 'w', lease_expires_at = now() + interval '1 minute', attempts = c.attempts + 1
         WHERE c.id IN (SELECT id FROM ${cb} WHERE status = 'pending' ${live} AND api_key_id = $1 ORDER BY priority, next_attempt_at LIMIT ${CHUNK} FOR UPDATE SKIP LOCKED) ${live}
         RETURNING c.id`,
        [keyId],
      );
      if (rows.length === 0) break;
      ids.push(rows.map((r) => r.id));
    }
  });
  phases['write-back'] = await measure(db, pid, async () => {
    for (const chunk of ids) {
      await db.query(
        `WITH done AS (
           UPDATE ${cb} c SET status = 'succeeded', completed_at = now(), ${partitioned ? 'done_at = now(),' : ''} lease_owner = NULL, lease_expires_at = NULL, last_status_code = 200
           WHERE c.id = ANY($1::uuid[]) AND c.status = 'in_flight' ${live}
           RETURNING c.id, c.api_key_id, c.host)
         INSERT INTO ${at} (callback_id, api_key_id, host, number, started_at, duration_ms, status_code, outcome)
         SELECT id, api_key_id, host, 1, now(), 3.5, 200, 'success' FROM done`,
        [chunk],
      );
    }
  });
  phases.purge = await measure(db, pid, async () => {
    if (partitioned) {
      for (const t of [`callback_p_${tag}`, `attempt_p_${tag}`]) {
        await db.query(`ALTER TABLE ${t.startsWith('callback') ? 'callback_p' : 'attempt_p'} DETACH PARTITION ${t} CONCURRENTLY`);
        await db.query(`DROP TABLE ${t}`);
      }
      return;
    }
    for (;;) {
      const { rowCount } = await db.query(
        `WITH doomed AS (
           SELECT id FROM callback WHERE status IN ('succeeded', 'failed', 'cancelled') AND completed_at < now()
           ORDER BY completed_at LIMIT ${PURGE_CHUNK} FOR UPDATE SKIP LOCKED)
         DELETE FROM callback c USING doomed WHERE c.id = doomed.id AND c.status IN ('succeeded', 'failed', 'cancelled')`,
      );
      if (rowCount < PURGE_CHUNK) break;
    }
  });
  phases.vacuum = await measure(db, pid, async () => {
    await db.query(partitioned ? 'VACUUM callback_p, attempt_p' : 'VACUUM callback, attempt');
  });
  const left = (await db.query(`SELECT (SELECT count(*) FROM ${cb})::int + (SELECT count(*) FROM ${at})::int AS n`)).rows[0].n;
  if (left !== 0) throw new Error(`${layout}: ${left} rows left after the purge`);
  return phases;
}

export async function historyLayoutScenario(server) {
  const url = await freshDatabase(server, 'bench_layout');
  // The service's migrations up to the history's partitioning: its tables, indexes and
  // triggers as they were before it are "today's table", and this script partitions a copy.
  const { migrate, readMigrations } = await distModule('database/migrator.js');
  const all = readMigrations();
  await migrate(
    url,
    all.slice(
      0,
      all.findIndex((m) => m.name === PARTITIONING),
    ),
  );
  const db = await connect(url);
  await db.query(`INSERT INTO api_key (id, name, prefix, hash) VALUES (gen_random_uuid(), 'layout', 'pl', md5(random()::text))`);
  try {
    const pid = await backendPidOf(db);
    const version = (await db.query(`SELECT current_setting('server_version') AS v`)).rows[0].v;
    await partitionedCopy(db, 'callback', 'done_at', { addDoneAt: true });
    await partitionedCopy(db, 'attempt', 'started_at', { addDoneAt: false });
    const keyId = (await db.query('SELECT id FROM api_key LIMIT 1')).rows[0].id;
    const batchId = (await db.query(`INSERT INTO batch (id, api_key_id, total) VALUES (gen_random_uuid(), $1, 0) RETURNING id`, [keyId])).rows[0].id;
    const results = { today: [], partitioned: [] };
    await round(db, pid, 'today', keyId, batchId, 2_000); // warm-up of both, not counted
    await round(db, pid, 'partitioned', keyId, batchId, 2_000);
    for (let r = 0; r < ROUNDS; r++) {
      for (const layout of r % 2 === 0 ? ['today', 'partitioned'] : ['partitioned', 'today']) {
        results[layout].push(await round(db, pid, layout, keyId, batchId, N));
      }
    }
    const medianOf = (layout, phase, k) => {
      const xs = results[layout].map((p) => p[phase][k]).sort((a, b) => a - b);
      return xs[Math.floor((xs.length - 1) / 2)];
    };
    const out = [];
    for (const phase of ['ingest', 'claim', 'write-back', 'purge', 'vacuum']) {
      const label = `history layout, ${phase} (${N.toLocaleString('en-US')} callbacks, ${version}); baseline: today's table`;
      out.push(
        row(`${label}: Postgres CPU per callback`, medianOf('partitioned', phase, 'cpuUs') / N, 'µs', {
          baseline: medianOf('today', phase, 'cpuUs') / N,
          higherIsBetter: false,
        }),
      );
      out.push(
        row(`  WAL per callback`, medianOf('partitioned', phase, 'wal') / N, 'bytes', { baseline: medianOf('today', phase, 'wal') / N, higherIsBetter: false }),
      );
      out.push(row(`  time`, medianOf('partitioned', phase, 'ms'), 'ms', { baseline: medianOf('today', phase, 'ms'), higherIsBetter: false }));
    }
    const whole = (layout, k) => ['ingest', 'claim', 'write-back', 'purge', 'vacuum'].reduce((s, ph) => s + medianOf(layout, ph, k), 0) / N;
    out.push(
      row('history layout, whole life: Postgres CPU per callback', whole('partitioned', 'cpuUs'), 'µs', {
        baseline: whole('today', 'cpuUs'),
        higherIsBetter: false,
      }),
    );
    out.push(row('  WAL per callback', whole('partitioned', 'wal'), 'bytes', { baseline: whole('today', 'wal'), higherIsBetter: false }));
    return out;
  } finally {
    await db.end();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(async (server) => historyLayoutScenario(server));
}
