import type pg from 'pg';

/**
 * Stores `n` pending callbacks of receiver `name` straight into the database, as
 * the ingest would (batches of at most 10,000, MAX_CALLBACKS_PER_BATCH's default; due
 * `dueIn` from now, an hour by default, so nothing is sent meanwhile): a backlog of
 * a hundred thousand through the API would take minutes.
 */
export async function seedPending(db: pg.Client, name: string, n: number, dueIn = '1 hour'): Promise<{ receiverId: string; batchId: string }> {
  const {
    rows: [r],
  } = await db.query(`SELECT id, api_key_id, url FROM receiver WHERE name = $1 AND deleted_at IS NULL`, [name]);
  let batchId = '';
  for (let done = 0; done < n; done += 10_000) {
    const size = Math.min(10_000, n - done);
    const {
      rows: [b],
    } = await db.query(`INSERT INTO batch (id, api_key_id, total) VALUES (gen_random_uuid(), $1, $2) RETURNING id`, [r.api_key_id, size]);
    batchId = b.id;
    await db.query(
      `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, headers, body, timeout_ms, max_attempts, status, next_attempt_at, receiver_id)
       SELECT gen_random_uuid(), $1, $2, $3, regexp_replace($3, '^(https?://[^/]+).*$', '\\1'), 'POST', '{}', '{}', 1000, 3, 'pending',
              now() + $5::interval + i * interval '1 microsecond', $4
       FROM generate_series(1, $6::int) AS i`,
      [b.id, r.api_key_id, r.url, r.id, dueIn, size],
    );
  }
  await db.query('ANALYZE callback');
  return { receiverId: r.id, batchId };
}

/**
 * Stores `n` failed callbacks of receiver `name` straight into the database, as the
 * ingest and the dispatcher would have left them (one batch, completed), with UUIDv7
 * ids of now (a recovery's window is on the ids' time): a backlog through real
 * failures would take minutes.
 */
export async function seedFailed(db: pg.Client, name: string, n: number): Promise<{ receiverId: string; batchId: string }> {
  const {
    rows: [r],
  } = await db.query(`SELECT id, api_key_id, url FROM receiver WHERE name = $1 AND deleted_at IS NULL`, [name]);
  const {
    rows: [b],
  } = await db.query(`INSERT INTO batch (id, api_key_id, total, completed_at) VALUES (gen_random_uuid(), $1, $2, now()) RETURNING id`, [r.api_key_id, n]);
  await db.query(
    `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, headers, body, timeout_ms, max_attempts, attempts, status,
                           next_attempt_at, completed_at, receiver_id, last_error)
     SELECT (lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0') || '7' || substr(md5(i::text || random()::text), 1, 19))::uuid,
            $1, $2, $3, regexp_replace($3, '^(https?://[^/]+).*$', '\\1'), 'POST', '{}', '{}', 1000, 3, 3, 'failed',
            now() - interval '1 minute', now() - interval '1 minute', $4, 'connect_error'
     FROM generate_series(1, $5::int) AS i`,
    [b.id, r.api_key_id, r.url, r.id, n],
  );
  await db.query('ANALYZE callback');
  return { receiverId: r.id, batchId: b.id };
}
