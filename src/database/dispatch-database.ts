import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../config/app.config.js';
import { openPool, PgStatements } from './pg.statements.js';
import { DATABASE_URL } from './prisma.service.js';

/** Connections for the claim and the write-back of one worker process. */
const POOL_SIZE = 6;

/**
 * The worker's own connections, for its statements only (claim, write-back,
 * release, reaper, batch completion), run past Prisma (PgStatements): these run
 * thousands of times a second, and Prisma's raw-query path measured 8% of a
 * worker's CPU at full load (a write-back carries ~100 KB of parameters).
 *
 * The connections differ from the API's in these session settings:
 *
 * - `synchronous_commit = off` (DISPATCH_SYNCHRONOUS_COMMIT, default off): a commit
 *   returns before its WAL reaches the disk. If Postgres itself crashes, the last
 *   fraction of a second of claims and write-backs can be lost, which puts those
 *   callbacks back where they were: a lost claim leaves the row pending, a lost
 *   write-back leaves it in flight until its lease runs out. Either way it is sent
 *   again with the same webhook-id, which at-least-once delivery allows; nothing
 *   a client stored is ever lost (ingest commits on the API's connections, synchronously).
 *   On this machine a commit's fsync cost more than the claim statement itself.
 * - `enable_bitmapscan = off`: the callback table is a queue whose statistics are
 *   always stale (statuses change thousands of times a second, ANALYZE runs at most
 *   once a minute), so the planner guesses a handful of due rows and reads them all
 *   with a bitmap scan, then sorts them, instead of walking `callback_due_idx` in
 *   order and stopping at the claim's LIMIT: 28 ms instead of 0.5 ms for 200 rows
 *   out of 20,000. The worker's statements all want index walks.
 * - `enable_sort = off`: makes a sort the plan of last resort (it still runs where
 *   nothing else gives the order). The claim reads each key's due rows oldest first
 *   from `callback_key_due_idx`, which gives that order; with the queue's stale
 *   statistics (a million finished rows, "no row pending") the planner instead read
 *   all of `callback_due_idx` and sorted it, for every key and priority: 1.46 s a
 *   claim instead of a few ms (`npm run bench:claim`, 1M finished rows). The other
 *   side of it: a statement of these sessions (and a trigger it fires) must get its
 *   order from an index wherever one can give it, or the planner takes any plan that
 *   avoids the sort: locks in name order are taken by primary key `= ANY(array)` or
 *   one by one from a sorted array, never as `IN (…) ORDER BY … FOR UPDATE`, which
 *   walked all of host_pkey (14 s a claim with a million hosts).
 * - `random_page_cost = 1.1` (the usual value for data in memory or on SSDs, instead
 *   of 4, which models spinning disks): the write-back finds its rows by primary key
 *   instead of reading the whole table, which with 4 looked cheaper below a few
 *   hundred thousand rows (5 ms instead of 1 ms for 200 rows out of 20,000).
 */
export const dispatchSessionOptions = (config: Pick<AppConfig, 'dispatchSynchronousCommit'>): string =>
  `-c enable_bitmapscan=off -c enable_sort=off -c random_page_cost=1.1 -c synchronous_commit=${config.dispatchSynchronousCommit}`;

@Injectable()
export class DispatchDatabase extends PgStatements implements OnApplicationShutdown {
  constructor(@Inject(DATABASE_URL) databaseUrl: string, config: AppConfig) {
    // Prepared by name, as the API's statements are (statement.names.ts): the claim plans in ~1 ms.
    super(openPool(databaseUrl, POOL_SIZE, dispatchSessionOptions(config)), 'dispatch');
  }

  /** Last of all, after the worker drained and wrote back in onModuleDestroy. */
  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }
}
