// Rows written straight into the bench database with generate_series, so seeding
// costs seconds and the figure measured is the service's, not the seeder's.
import { distModule } from './harness.mjs';

/**
 * SQL for a new id ordered by the time `at` (an SQL timestamp expression), as the
 * service's UUIDv7 ids are: the 48-bit millisecond time first, then random bits. Seeds
 * made with gen_random_uuid() alone would scatter their primary-key entries over
 * the whole index, a cost the service's ids never pay. (Postgres 18's uuidv7() does
 * this; this form also works on older servers given as DATABASE_URL.)
 */
const idAt = (at) =>
  `encode(overlay(uuid_send(gen_random_uuid()) PLACING substring(int8send((extract(epoch FROM ${at}) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 'hex')::uuid`;

/** The bench key's id (the service created it from BOOTSTRAP_API_KEY at start). */
export async function benchKeyId(db) {
  const { rows } = await db.query('SELECT id FROM api_key ORDER BY created_at LIMIT 1');
  if (!rows[0]) throw new Error('no api key in the bench database: start the service on it first');
  return rows[0].id;
}

/**
 * One batch of `n` callbacks due now to `urls` (round robin), of `receiverId` when
 * given (its secrets sign them, its credentials go with them), committed in one
 * transaction with the same NOTIFY the API sends. Returns the batch id and the time
 * (performance.now()) the COMMIT was sent. `receiverId`: the callbacks name that
 * receiver (its secret signs them, its transform runs).
 */
export async function seedDue(db, keyId, urls, n, { timeoutMs = 15_000, receiverId = null } = {}) {
  const hosts = urls.map((u) => {
    const x = new URL(u);
    return `${x.protocol}//${x.hostname}:${x.port || 80}`;
  });
  await db.query('BEGIN');
  const { rows } = await db.query(`INSERT INTO batch (id, api_key_id, label, total) VALUES (${idAt('clock_timestamp()')}, $1, 'bench', $2) RETURNING id`, [
    keyId,
    n,
  ]);
  const batchId = rows[0].id;
  await db.query(
    `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, headers, body, timeout_ms, max_attempts, status, next_attempt_at, receiver_id)
     SELECT ${idAt('clock_timestamp()')}, $1, $2, ($3::text[])[1 + i % cardinality($3::text[])], ($4::text[])[1 + i % cardinality($4::text[])],
            'POST', '{"content-type":"application/json"}', '{"event":"bench","n":' || i || '}', $5, 1, 'pending', now(), $7::uuid
     FROM generate_series(0, $6 - 1) AS i`,
    [batchId, keyId, urls, hosts, timeoutMs, n, receiverId],
  );
  await db.query(`SELECT pg_notify('callback_due', '')`);
  const committedAt = performance.now();
  await db.query('COMMIT');
  return { batchId, committedAt };
}

/** Callbacks of the batch not finished yet (served by callback_batch_id_status_idx). */
export async function openCount(db, batchId) {
  const { rows } = await db.query(`SELECT count(*)::int AS n FROM callback WHERE batch_id = $1 AND status IN ('pending', 'in_flight')`, [batchId]);
  return rows[0].n;
}

/**
 * A million (by default) finished callbacks with one attempt each, as months of
 * traffic would leave them: in batches of 100, one callback in a thousand failed (a
 * 500), the rest succeeded. Skipped when the rows are there.
 */
export async function seedFinished(db, keyId, total = 1_000_000) {
  const { rows } = await db.query(`SELECT count(*)::int AS n FROM callback WHERE status IN ('succeeded', 'failed')`);
  if (rows[0].n >= total) return false;
  const perBatch = 100;
  const perStatement = 10_000;
  const at = (offset) => `now() - interval '30 days' + (${offset}) * interval '1 ms'`;
  for (let s = 0; s < total / perStatement; s++) {
    await db.query(
      `WITH b AS (
         INSERT INTO batch (id, api_key_id, label, total, created_at, completed_at)
         SELECT ${idAt(at('$3::int * $4::int + (k - 1) * $2::int'))}, $1, 'history', $2, now() - interval '30 days', now() - interval '30 days'
         FROM generate_series(1, $4::int / $2::int) AS k
         RETURNING id
       ), numbered AS (
         SELECT id, row_number() OVER (ORDER BY id) - 1 AS k FROM b
       ), c AS (
         INSERT INTO callback (id, batch_id, api_key_id, url, host, method, headers, body, timeout_ms, max_attempts,
                               status, attempts, next_attempt_at, last_status_code, created_at, completed_at)
         SELECT ${idAt(at('$3::int * $4::int + i'))}, numbered.id, $1, 'http://127.0.0.1:9/old/' || i, 'http://127.0.0.1:9', 'POST', '{}',
                '{"event":"old","n":' || i || '}', 15000, 8, CASE WHEN i % 1000 = 0 THEN 'failed' ELSE 'succeeded' END, 1,
                now() - interval '30 days', CASE WHEN i % 1000 = 0 THEN 500 ELSE 200 END,
                now() - interval '30 days', now() - interval '30 days'
         FROM generate_series(0, $4::int - 1) AS i JOIN numbered ON numbered.k = i / $2::int
         RETURNING id, status
       )
       INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, dns_ms, connect_ms,
                            first_byte_ms, status_code, outcome, response_headers, response_body, worker)
       SELECT id, $1, 'http://127.0.0.1:9', 1, now() - interval '30 days', 12.5, 0, 0.3, 12.1,
              CASE status WHEN 'failed' THEN 500 ELSE 200 END, CASE status WHEN 'failed' THEN 'http_error' ELSE 'success' END,
              '{"content-type":"text/plain"}', 'ok', 'seed'
       FROM c`,
      [keyId, perBatch, s, perStatement],
    );
  }
  await db.query('VACUUM ANALYZE callback');
  await db.query('VACUUM ANALYZE attempt');
  await db.query('VACUUM ANALYZE batch');
  return true;
}

/** The history's retention window (the default RETENTION_HOURS) and the slots of it seeded: its time partitions (src/retention). */
export const HISTORY_RETENTION_HOURS = 720;
const HISTORY_SLOTS = 10;

/**
 * The service's own PartitionRepository (dist/retention/partition.repository.js) on a
 * pg client: its statements are Prisma.sql values, run here as text and values.
 */
export async function partitionRepositoryOn(db) {
  const { PartitionRepository } = await distModule('retention/partition.repository.js');
  const runner = {
    // dropDetached takes a connection of its own from the service's pool: here the same client.
    pool: { connect: async () => ({ query: (...args) => db.query(...args), release: () => undefined }) },
    $queryRaw: async (s) => (await db.query(s.text, s.values)).rows,
    $executeRaw: async (s) => (await db.query(s.text, s.values)).rowCount,
    async $transaction(fn) {
      await db.query('BEGIN');
      try {
        const result = await fn(runner);
        await db.query('COMMIT');
        return result;
      } catch (error) {
        await db.query('ROLLBACK');
        throw error;
      }
    },
  };
  return new PartitionRepository(runner);
}

/**
 * The seeded history's slots: the last HISTORY_SLOTS time partitions of the service's
 * grid at RETENTION_HOURS=720 (72 h wide) before the one now is in, so 30 days that
 * the retention window keeps whole, each slot a partition of callbacks and one of
 * attempts. `[{ from, to, callback, attempt }]`, oldest first, epoch ms and partition names.
 */
export async function historySlots(now = Date.now()) {
  const { partitionName, partitionWidthMs } = await distModule('retention/partition.policy.js');
  const width = partitionWidthMs(HISTORY_RETENTION_HOURS);
  const current = Math.floor(now / width) * width;
  return Array.from({ length: HISTORY_SLOTS }, (_, k) => {
    const from = current - (HISTORY_SLOTS - k) * width;
    return { from, to: from + width, callback: partitionName('callback', from), attempt: partitionName('attempt', from) };
  });
}

/**
 * `total` finished callbacks with one attempt each, as 30 days of traffic leave them
 * (in batches of 100, one callback in a thousand failed with a 500, the rest
 * succeeded), spread evenly over the slots of historySlots: each row finished (done_at)
 * and its attempt started in its slot, so both land in the service's time partitions,
 * made here by the service's own code (PartitionRepository.makePartitions with the
 * policy's partitionsToMake). The migration's `attempt_before` (MINVALUE to when the
 * database was made) is dropped first when empty, so attempts go to time partitions
 * too. Slots already full are kept; a slot partly filled or dropped is emptied (its
 * batches too) and filled again; slots older than the window's are dropped (the service's dropPartition). Returns the
 * number of slots seeded.
 */
export async function seedHistory(db, keyId, total = 1_000_000) {
  const { partitionWidthMs, partitionsToMake } = await distModule('retention/partition.policy.js');
  const repo = await partitionRepositoryOn(db);
  const width = partitionWidthMs(HISTORY_RETENTION_HOURS);
  const slots = await historySlots();
  const first = slots[0].from;
  const perSlot = Math.round(total / slots.length);
  for (const table of ['callback', 'attempt']) {
    // A drop a run left half done (detached, not dropped) would stop the partition being made again.
    if (repo.detachedLeftovers) for (const name of await repo.detachedLeftovers(table)) await repo.dropDetached(name);
    for (const p of await repo.partitionsOf(table)) {
      const empty = p.name === 'attempt_before' && (await db.query('SELECT NOT EXISTS (SELECT 1 FROM attempt_before) AS e')).rows[0].e;
      if (empty || (p.to !== null && Number.isFinite(p.to) && p.to <= first)) await repo.dropPartition(table, p.name, p.detaching);
    }
    await repo.makePartitions(table, (existing) => {
      const all = [...existing];
      const todo = [];
      for (let at = first + width; at <= slots.at(-1).to; at += width) {
        const more = partitionsToMake(all, at, width);
        todo.push(...more);
        all.push(...more.map((m) => ({ name: '', ...m })));
      }
      return todo;
    });
  }
  await db.query(`DELETE FROM batch WHERE label = 'history' AND created_at < $1`, [new Date(first)]); // of slots dropped above
  await db.query('SET synchronous_commit = off');
  let seeded = 0;
  for (const slot of slots) {
    const { rows } = await db.query(`SELECT (SELECT count(*)::int FROM ${slot.callback}) AS c, (SELECT count(*)::int FROM ${slot.attempt}) AS a`);
    if (rows[0].c === perSlot && rows[0].a === perSlot) continue;
    if (rows[0].c + rows[0].a > 0) await db.query(`TRUNCATE ${slot.callback}, ${slot.attempt}`);
    await db.query(`DELETE FROM batch WHERE label = 'history' AND created_at >= $1 AND created_at < $2`, [new Date(slot.from), new Date(slot.to)]);
    await seedSlot(db, keyId, slot, perSlot);
    seeded++;
  }
  await db.query('SET synchronous_commit = on');
  if (seeded > 0) {
    await db.query('VACUUM ANALYZE callback');
    await db.query('VACUUM ANALYZE attempt');
    await db.query('VACUUM ANALYZE batch');
  }
  return seeded;
}

/** `n` finished callbacks of the history in `slot`, evenly from a second after its start to a second before its end. */
async function seedSlot(db, keyId, slot, n) {
  const perBatch = 100;
  const perStatement = 100_000;
  const stepMs = (slot.to - slot.from - 2_000) / n;
  const at = (i) => `to_timestamp(($5::float8 + 1000 + (${i}) * $6::float8) / 1000)`;
  for (let s = 0; s * perStatement < n; s++) {
    const count = Math.min(perStatement, n - s * perStatement);
    await db.query(
      `WITH b AS (
         INSERT INTO batch (id, api_key_id, label, total, created_at, completed_at)
         SELECT ${idAt(at('$3::int * $4::int + (k - 1) * $2::int'))}, $1, 'history', $2, ${at('$3::int * $4::int + (k - 1) * $2::int')}, ${at('$3::int * $4::int + k * $2::int - 1')}
         FROM generate_series(1, $4::int / $2::int) AS k
         RETURNING id
       ), numbered AS (
         SELECT id, row_number() OVER (ORDER BY id) - 1 AS k FROM b
       ), c AS (
         INSERT INTO callback (id, batch_id, api_key_id, url, host, method, headers, body, timeout_ms, max_attempts,
                               status, attempts, next_attempt_at, last_status_code, created_at, completed_at, done_at)
         SELECT ${idAt(at('$3::int * $4::int + i'))}, numbered.id, $1, 'http://127.0.0.1:9/old/' || i, 'http://127.0.0.1:9', 'POST', '{}',
                '{"event":"old","n":' || i || '}', 15000, 8, CASE WHEN i % 1000 = 0 THEN 'failed' ELSE 'succeeded' END, 1,
                ${at('$3::int * $4::int + i')}, CASE WHEN i % 1000 = 0 THEN 500 ELSE 200 END,
                ${at('$3::int * $4::int + i')}, ${at('$3::int * $4::int + i')} + interval '13 ms', ${at('$3::int * $4::int + i')} + interval '13 ms'
         FROM generate_series(0, $4::int - 1) AS i JOIN numbered ON numbered.k = i / $2::int
         RETURNING id, status, created_at
       )
       INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, dns_ms, connect_ms,
                            first_byte_ms, status_code, outcome, response_headers, response_body, worker)
       SELECT id, $1, 'http://127.0.0.1:9', 1, created_at, 12.5, 0, 0.3, 12.1,
              CASE status WHEN 'failed' THEN 500 ELSE 200 END, CASE status WHEN 'failed' THEN 'http_error' ELSE 'success' END,
              '{"content-type":"text/plain"}', 'ok', 'seed'
       FROM c`,
      [keyId, perBatch, s, count, slot.from, stepMs],
    );
  }
}
