import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import type pg from 'pg';
import { CaughtErrors } from '../logging/caught-errors.js';
import { AppConfig } from '../config/app.config.js';
import { DATABASE_TARGET, type DatabaseTarget } from './database.target.js';
import { answerWithinMs, openPool, PgStatements, timeoutSettings, type LocalSettings } from './pg.statements.js';

/** Connections for the claim and the write-back of one worker process. */
const POOL_SIZE = 6;

/**
 * What every statement of the worker runs with:
 *
 * - `synchronous_commit` (DISPATCH_SYNCHRONOUS_COMMIT, default off). Off, a commit
 *   returns before its WAL reaches the disk, so claims and write-backs do not wait for a
 *   flush. If Postgres itself crashes, the last fraction of a second of claims and
 *   write-backs can be lost, which puts those callbacks back where they were: a lost
 *   claim leaves the row pending, a lost write-back leaves it in flight until its lease
 *   runs out. Either way it is sent again with the same webhook-id, which at-least-once
 *   delivery allows; nothing a client stored is ever lost (ingest commits on the API's
 *   connections, synchronously).
 * - `jit = off`: these are short statements, run thousands of times a second. JIT
 *   compiles a statement whose estimated cost passes `jit_above_cost`, which the queue's
 *   stale statistics, a long id list, or the claim's own planner settings (CLAIM_PLANNER)
 *   reach, and the compile costs far more than the statement, at every run. JIT is on by
 *   default wherever Postgres is built with LLVM (Debian's is, the embedded server is
 *   not); off here, a worker runs the same on either. The API's statements keep the
 *   server's setting.
 * - `statement_timeout`, `lock_timeout`: the safety net of every session
 *   (timeoutSettings).
 * - `random_page_cost = 1.1` (the usual value for data in memory or on SSDs; 4 models
 *   spinning disks): a cost of the planner's model, not a switch, so nothing is inflated.
 *   With 4 and the queue's stale statistics (no lease held when ANALYZE ran), the
 *   write-back reads a queue of up to a few hundred thousand rows whole into a hash
 *   instead of finding its rows by primary key (test/db/leases.test.ts shows the plan).
 *
 * How they are set depends on the connection. Directly, once per connection as it opens
 * (openPool's session settings): a session keeps them, and a statement runs alone; set
 * per statement instead, they would cost each statement two round trips more (BEGIN with
 * the SETs, the statement, COMMIT; bench/README.md, "the servers users run"). Behind a
 * transaction pooler, as `SET LOCAL` in each statement's own transaction, sent with the
 * statement as one message (runInOneTrip): a pooler refuses startup options, and a
 * session's SET would stay on whichever server connection ran it. No planner switch is
 * set here: each statement gets its plan from its own shape (test/db/plans.test.ts checks
 * them on every supported server); the claims' own (CLAIM_PLANNER) are set for them alone
 * (runnerWith).
 */
export const dispatchSettings = (
  config: Pick<AppConfig, 'dispatchSynchronousCommit' | 'databaseStatementTimeoutMs' | 'databaseLockTimeoutMs'>,
): LocalSettings => ({
  synchronous_commit: config.dispatchSynchronousCommit,
  jit: 'off',
  random_page_cost: '1.1',
  ...timeoutSettings(config),
});

/** The worker's pool, its statements' names and what each statement sets: see dispatchSettings. */
function dispatchConnections(target: DatabaseTarget, config: AppConfig, caught: CaughtErrors): [pg.Pool, string | null, LocalSettings] {
  const onIdleError = (error: Error) => caught.record('dispatch_pool_idle_connection', error, 'dropped from the pool; the next statement opens another');
  if (target.pooled) return [openPool(target.url, POOL_SIZE, onIdleError, {}, answerWithinMs(config)), null, dispatchSettings(config)];
  return [openPool(target.url, POOL_SIZE, onIdleError, dispatchSettings(config), answerWithinMs(config)), 'dispatch', {}];
}

/**
 * The worker's own connections, for its statements only (claim, write-back,
 * release, reaper, batch completion), run past Prisma (PgStatements): these run
 * thousands of times a second, and Prisma's raw-query path measured 8% of a
 * worker's CPU at full load (a write-back carries ~100 KB of parameters).
 */
@Injectable()
export class DispatchDatabase extends PgStatements implements OnApplicationShutdown {
  private readonly ownPools: pg.Pool[] = [];

  constructor(
    @Inject(DATABASE_TARGET) private readonly target: DatabaseTarget,
    private readonly config: AppConfig,
    private readonly caught: CaughtErrors,
  ) {
    // Prepared by name, as the API's statements are (statement.names.ts): the claim plans in ~1 ms.
    // Unnamed behind a transaction pooler.
    super(...dispatchConnections(target, config, caught));
  }

  /**
   * A runner for statements that need `settings` on top of dispatchSettings (the
   * claims' planner switches), for theirs alone. Directly: `size` connections of
   * their own, whose sessions carry them from their start, so each statement runs
   * alone in autocommit, prepared by name, and its locks end with it. Setting them
   * per statement instead (`BEGIN; SET LOCAL …`, statement, `COMMIT`) took two more
   * round trips, and the claim's host rows stayed locked until this process,
   * busy sending, got round to its COMMIT: every other worker's claim and
   * write-back of that host waited meanwhile. Behind a transaction pooler: the
   * same pool, the settings `SET LOCAL` in one round trip with the statement
   * (runInOneTrip).
   */
  runnerWith(prefix: string, settings: LocalSettings, size: number): PgStatements {
    const all = { ...dispatchSettings(this.config), ...settings };
    if (this.target.pooled) return new PgStatements(this.pool, null, all);
    const onIdleError = (error: Error) =>
      this.caught.record(`${prefix}_pool_idle_connection`, error, 'dropped from the pool; the next statement opens another');
    const pool = openPool(this.target.url, size, onIdleError, all, answerWithinMs(this.config));
    this.ownPools.push(pool);
    return new PgStatements(pool, prefix, {});
  }

  /** Last of all, after the worker drained and wrote back in onModuleDestroy. */
  async onApplicationShutdown(): Promise<void> {
    await Promise.all([this.pool, ...this.ownPools].map((p) => p.end()));
  }
}
