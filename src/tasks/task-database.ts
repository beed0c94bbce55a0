import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { CaughtErrors } from '../logging/caught-errors.js';
import { AppConfig } from '../config/app.config.js';
import { DATABASE_TARGET, type DatabaseTarget } from '../database/database.target.js';
import { answerWithinMs, openPool, PgStatements, timeoutSettings } from '../database/pg.statements.js';

/** Connections for the chunks of one process's tasks (one runs at a time per task). */
const POOL_SIZE = 2;

/**
 * Times a chunk is run again, after a short jittered pause, when Postgres ended it
 * for a deadlock or a serialization failure (PgStatements.retryConflicts): a chunk is
 * one statement in its own transaction, so nothing of it was kept. The usual one: a
 * receiver task's chunk waits for a write-back holding the receiver (`rv`), and its
 * update then meets rows that write-back moved into their time partition ("tuple to
 * be locked was already moved to another partition"); run again, it reads them where
 * they now are. Past these, the runner's own retry (RETRY_MS) takes over.
 */
const TASK_CONFLICT_RETRIES = 3;

/**
 * What a chunk runs with:
 * - `synchronous_commit = off`: a chunk lost in a database crash is run again (the task's
 *   row moves on in its commit; each chunk is idempotent).
 * - `enable_bitmapscan = off`, `enable_sort = off`, `jit = off`: the claim's
 *   (CLAIM_PLANNER), for the same stale statistics: guessing a receiver has a few dozen
 *   rows, the planner would bitmap-scan and sort all its rows for each chunk, not walk
 *   `callback_receiver_idx` from the cursor.
 * - `random_page_cost = 1.1`, the worker's (dispatchSettings): with 4, even on fresh
 *   statistics, the update hash-joins the whole table instead of using the primary key.
 * - the timeouts of every session (timeoutSettings).
 */
export const chunkSettings = (config: AppConfig) =>
  ({
    synchronous_commit: 'off',
    enable_bitmapscan: 'off',
    enable_sort: 'off',
    jit: 'off',
    random_page_cost: '1.1',
    ...timeoutSettings(config),
  }) as const;

/**
 * The tasks' own connections. Directly, each session carries chunkSettings from its
 * start, so a chunk, one statement, runs alone in autocommit: its locks end with the
 * statement, never waiting on a busy process for a COMMIT. Behind a transaction
 * pooler, each chunk sets them in its own transaction (`SET LOCAL`), sent with the
 * chunk as one message (runInOneTrip): the same, without a session.
 */
@Injectable()
export class TaskDatabase extends PgStatements implements OnApplicationShutdown {
  constructor(@Inject(DATABASE_TARGET) target: DatabaseTarget, config: AppConfig, caught: CaughtErrors) {
    const onIdleError = (error: Error) => caught.record('task_pool_idle_connection', error, 'dropped from the pool; the next chunk opens another');
    const settings = chunkSettings(config);
    if (target.pooled) super(openPool(target.url, POOL_SIZE, onIdleError, {}, answerWithinMs(config)), null, settings, {}, TASK_CONFLICT_RETRIES);
    else super(openPool(target.url, POOL_SIZE, onIdleError, settings, answerWithinMs(config)), 'task', {}, {}, TASK_CONFLICT_RETRIES);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }
}
