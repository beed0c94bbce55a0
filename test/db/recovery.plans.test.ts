import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppConfig } from '../../src/config/app.config.js';
import { countRecoverable, recoveryChunk, type RecoveryFilter } from '../../src/recoveries/recovery.sql.js';
import { chunkSettings } from '../../src/tasks/task-database.js';
import { autovacuumOff, checkPlan, explainStatement, planDatabase } from '../support/plans.js';

/**
 * A recovery's statements (its count and its chunk, as the tasks' connections run it)
 * on a key whose receiver kept 60,000 succeeded callbacks and 20,000 failed ones over
 * the last 10 hours, beside another receiver's 20,000 failed and another key's 20,000:
 * statistics from before the failures, as a queue's lag. What it checks is that a
 * chunk reads its few hundred rows from the cursor through callback_unsuccessful_idx
 * (never the receiver's successes, nor another key's rows), and that the count reads
 * only the key's failed rows of the window.
 */
const SUCCEEDED = 60_000;
const FAILED = 20_000;
/**
 * Rows each may read (rowsRead), about twice what it reads on embedded 18: the count
 * 11,997 (the key's failed rows of the window and their index entries), a chunk 3.5
 * per callback it requeues; the table holds 80,000.
 */
const COUNT_READ_AT_MOST = 25_000;
const CHUNK_READ_PER_ROW = 7;

/** A UUIDv7-like id of `ms` ago (SQL): the time the window is on, then random digits. */
const idAgo = (ms: string) =>
  `(lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint - (${ms})), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid`;

describe('recovery plans', () => {
  let db: pg.Client;
  let drop: () => Promise<void>;
  let url: string;
  let server = '';
  let filter: RecoveryFilter;
  const taskId = '01900000-0000-7000-8000-000000000001';

  beforeAll(async () => {
    let keys: string[];
    ({ url, drop, db, server, keys } = await planDatabase());
    await autovacuumOff(db, 'callback');
    const [a, b] = keys;
    const receivers = (
      await db.query<{ id: string }>(
        `INSERT INTO receiver (id, api_key_id, name, url) VALUES (gen_random_uuid(), $1, 'shop', 'http://127.0.0.1:9/shop'),
         (gen_random_uuid(), $1, 'other', 'http://127.0.0.1:9/other'), (gen_random_uuid(), $2, 'shop', 'http://127.0.0.1:9/shop') RETURNING id`,
        [a, b],
      )
    ).rows.map((r) => r.id);
    const batch = (await db.query<{ id: string }>(`INSERT INTO batch (id, api_key_id, total) VALUES (gen_random_uuid(), $1, 0) RETURNING id`, [a])).rows[0].id;
    // n callbacks of `receiver` (key `key`) in `status`, accepted over the last 10 hours
    const insert = (n: number, key: string, receiver: string, status: string) =>
      db.query(
        `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, timeout_ms, max_attempts, attempts, status, next_attempt_at,
                               completed_at, receiver_id)
         SELECT ${idAgo('i * 1800')}, $1, $2, 'http://127.0.0.1:9/x', 'http://127.0.0.1:9', 'POST', 5000, 3, 3, $3, now(),
                now() - interval '1 minute', $4
         FROM generate_series(1, $5::int) i`,
        [batch, key, status, receiver, n],
      );
    await insert(SUCCEEDED, a, receivers[0], 'succeeded');
    await db.query('VACUUM ANALYZE callback');
    await insert(FAILED, a, receivers[0], 'failed');
    await insert(FAILED, a, receivers[1], 'failed');
    await insert(FAILED, b, receivers[2], 'failed');
    await db.query(`INSERT INTO task (id, api_key_id, kind, statuses) VALUES ($1, $2, 'recovery', '{failed}')`, [taskId, a]);
    filter = {
      apiKeyId: a,
      receiverId: receivers[0],
      host: null,
      batchId: null,
      since: new Date(Date.now() - 3 * 3_600_000),
      until: new Date(),
      priority: 2,
    };
    await db.query(
      `INSERT INTO recovery (id, api_key_id, receiver_id, statuses, since, until, priority, matched) VALUES ($1, $2, $3, '{failed}', $4, $5, 2, 0)`,
      [taskId, a, receivers[0], filter.since, filter.until],
    );
  }, 120_000);
  afterAll(async () => {
    await db?.end();
    await drop?.();
  });

  const settings = chunkSettings({ databaseStatementTimeoutMs: 0, databaseLockTimeoutMs: 0 } as AppConfig);

  it("should count the receiver's failed callbacks of the window as a row-by-row count does, through callback_unsuccessful_idx", async () => {
    const statement = countRecoverable(filter, ['failed']);
    const [{ n }] = (await db.query<{ n: number }>(statement.text, statement.values as unknown[])).rows;
    const truth = Number(
      (
        await db.query(
          `SELECT count(*) AS n FROM callback WHERE api_key_id = $1 AND receiver_id = $2 AND status = 'failed'
             AND id >= (lpad(to_hex((extract(epoch FROM $3::timestamptz) * 1000)::bigint), 12, '0') || '00000000000000000000')::uuid`,
          [filter.apiKeyId, filter.receiverId, filter.since],
        )
      ).rows[0].n,
    );
    expect(n).toBe(truth);
    expect(n).toBeGreaterThan(FAILED / 5);
    expect(n).toBeLessThan(FAILED / 2);
    checkPlan('recovery count', await explainStatement(url, statement), server, { uses: ['callback_unsuccessful_idx'], maxRows: COUNT_READ_AT_MOST });
  });

  it('should requeue a chunk from the cursor through callback_unsuccessful_idx, never reading the successes', async () => {
    for (const size of [200, 800] as const) {
      checkPlan(`recovery chunk of ${size}`, await explainStatement(url, recoveryChunk(taskId, filter, size), settings), server, {
        uses: ['callback_unsuccessful_idx', 'task_pkey'],
        maxRows: size * CHUNK_READ_PER_ROW,
      });
    }
  });
});
