import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { openBatchesWithNothingLeft } from '../../src/queue/batch-completion.sql.js';
import { loadConfig } from '../../src/config/app.config.js';
import { dispatchSettings } from '../../src/database/dispatch-database.js';
import { settledRecoveries } from '../../src/queue/operator-causes.sql.js';
import { autovacuumOff, checkPlan, explainStatement, planDatabase } from '../support/plans.js';

/**
 * The maintenance sweeps' probes (is anything of this batch, or of this recovery,
 * still unfinished?) on a queue of a few big batches whose rows lie together, as a
 * backlog ingested ahead of its time leaves them: 10 open batches of 2,000 pending
 * callbacks, each of one recovery, analysed. A probe that let a scan of the table
 * stop at its first match looked cheapest there and read the whole table per batch
 * (578 ms at 100,000 rows, every sweep); each must probe its index instead.
 */
const BATCHES = 10;
const PER_BATCH = 2000;

describe('batch and recovery sweeps', () => {
  let db: pg.Client;
  let drop: () => Promise<void>;
  let url: string;
  let server = '';

  beforeAll(async () => {
    let keys: string[];
    ({ url, drop, db, server, keys } = await planDatabase());
    await autovacuumOff(db, 'callback', 'batch');
    for (let i = 0; i < BATCHES; i++) {
      const {
        rows: [b],
      } = await db.query(`INSERT INTO batch (id, api_key_id, total) VALUES (gen_random_uuid(), $1, $2) RETURNING id`, [keys[0], PER_BATCH]);
      const {
        rows: [t],
      } = await db.query(
        `INSERT INTO task (id, api_key_id, kind, status, statuses) VALUES (gen_random_uuid(), $1, 'recovery', 'finished', '{failed}') RETURNING id`,
        [keys[0]],
      );
      await db.query(`INSERT INTO recovery (id, api_key_id, statuses, until, priority, matched) VALUES ($1, $2, '{failed}', now(), 1, $3)`, [
        t.id,
        keys[0],
        PER_BATCH,
      ]);
      await db.query(
        `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, headers, body, timeout_ms, max_attempts, status, next_attempt_at, recovery_id)
         SELECT gen_random_uuid(), $1, $2, 'http://127.0.0.9:9/x', 'http://127.0.0.9:9', 'POST', '{}', '{}', 1000, 3, 'pending', now() + interval '1 hour', $3
         FROM generate_series(1, $4::int)`,
        [b.id, keys[0], t.id, PER_BATCH],
      );
    }
    await db.query('ANALYZE callback');
    await db.query('ANALYZE batch');
  }, 120_000);
  afterAll(async () => {
    await db?.end();
    await drop?.();
  });

  /** Rows each may read (rowsRead): 20 on embedded 18, one probe per batch or recovery; the queue is thousands. */
  const READ_AT_MOST = 100;
  const explain = (statement: Parameters<typeof explainStatement>[1]) => explainStatement(url, statement, dispatchSettings(loadConfig({})));

  it('should find open batches with nothing left by one probe of callback_batch_id_status_idx per batch, not a scan of the queue', async () => {
    checkPlan('openBatchesWithNothingLeft', await explain(openBatchesWithNothingLeft(100)), server, {
      uses: ['callback_batch_id_status_idx'],
      maxRows: READ_AT_MOST,
      jitOff: true,
    });
  });

  it('should find settled recoveries by one probe of callback_recovery_idx per recovery, not a scan of the queue', async () => {
    checkPlan('settledRecoveries', await explain(settledRecoveries({ timeoutMs: 15_000, maxAttempts: 8 })), server, {
      uses: ['callback_recovery_idx'],
      maxRows: READ_AT_MOST,
      jitOff: true,
    });
  });
});
