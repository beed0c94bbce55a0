import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { loadConfig } from '../../src/config/app.config.js';
import { purgeEmptyBatches } from '../../src/retention/retention.sql.js';
import { autovacuumOff, checkPlan, explainStatement, planDatabase } from '../support/plans.js';

/**
 * The retention's empty-batch purge on a history far bigger than what it deletes:
 * 200,000 finished callbacks of 200 batches in yesterday's partition, their batches
 * completed before the cutoff, and 100 empty batches (their callbacks gone with
 * their partitions) completed before those, analysed. The empty-batch purge written
 * as `NOT EXISTS` became a hash anti-join that read the batch id of every callback
 * the history keeps (here 200,000; 408,236 in a steady-state run, 0.3-1.45 s every
 * purge); it must read the batches it looks at, whatever the history holds.
 */
const FULL_BATCHES = 200;
const PER_BATCH = 1000;
const EMPTY_BATCHES = 100;
const HOUR = 3_600_000;

describe('retention purge plans', () => {
  let db: pg.Client;
  let drop: () => Promise<void>;
  let url: string;
  let server = '';
  const now = Date.now();

  beforeAll(async () => {
    let keys: string[];
    ({ url, drop, db, server, keys } = await planDatabase());
    await autovacuumOff(db, 'callback', 'batch');
    const at = (hoursAgo: number) => new Date(now - hoursAgo * HOUR).toISOString();
    await db.query(
      `INSERT INTO batch (id, api_key_id, total, created_at, completed_at)
       SELECT gen_random_uuid(), $1, 1, $2::timestamptz + i * interval '1 second', $3::timestamptz + i * interval '1 second'
       FROM generate_series(1, $4::int) i`,
      [keys[0], at(23), at(22), EMPTY_BATCHES],
    );
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO batch (id, api_key_id, total, created_at, completed_at)
       SELECT gen_random_uuid(), $1, $2, $3::timestamptz + i * interval '1 second', $4::timestamptz + i * interval '1 second'
       FROM generate_series(1, $5::int) i RETURNING id`,
      [keys[0], PER_BATCH, at(21), at(20), FULL_BATCHES],
    );
    await db.query(
      `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, headers, body, timeout_ms, max_attempts, status, next_attempt_at,
                             created_at, completed_at, done_at)
       SELECT gen_random_uuid(), b, $1, 'http://127.0.0.9:9/x', 'http://127.0.0.9:9', 'POST', '{}', '{}', 1000, 3, 'succeeded', $2::timestamptz,
              $2::timestamptz, $3::timestamptz, $3::timestamptz
       FROM unnest($4::uuid[]) b, generate_series(1, $5::int)`,
      [keys[0], at(21), at(20), rows.map((r) => r.id), PER_BATCH],
    );
    await db.query('ANALYZE callback');
    await db.query('ANALYZE batch');
  }, 180_000);
  afterAll(async () => {
    await db?.end();
    await drop?.();
  });

  const config = loadConfig({});
  const cutoff = () => new Date(now - HOUR);

  it('should find empty batches by one probe of callback_batch_id_status_idx per batch, not by reading the history', async () => {
    // The 300 batches completed before the cutoff walked, one row found for each of the 200 not empty, and the
    // delete's read of the batch table (a hash join at this size): 801 rows on embedded 18, the history 200,000.
    checkPlan('purgeEmptyBatches', await explainStatement(url, purgeEmptyBatches(cutoff(), config.retentionPurgeBatch)), server, {
      uses: ['batch_completed_idx', 'callback_batch_id_status_idx'],
      maxRows: 4 * (FULL_BATCHES + EMPTY_BATCHES),
    });
  });
});
