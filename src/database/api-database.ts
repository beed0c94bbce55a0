import { Inject, Injectable } from '@nestjs/common';
import { DATABASE_TARGET, type DatabaseTarget } from './database.target.js';
import { AppConfig } from '../config/app.config.js';
import { PgStatements, timeoutSettings } from './pg.statements.js';
import { PrismaService } from './prisma.service.js';

/**
 * Times a statement alone of a request (the ingest's insert, a cancel, …) is run again
 * after Postgres ended it for a deadlock or a serialization failure
 * (PgStatements.retryConflicts); past them, or in a transaction, the request is
 * answered 503 `db_conflict` (ErrorFilter).
 */
const API_CONFLICT_RETRIES = 3;

/**
 * For an API read a long history prices past `jit_above_cost` while it runs in
 * milliseconds: its own transaction without JIT (the API's other statements keep the
 * server's setting). A batch's progress and timeline: thousands of index probes add
 * up (compiling took 0.4 s, the read 0.15-0.2 s for 10,000 callbacks, Debian's 15). The
 * latency history: the planner takes its per-bucket LATERAL for 1,000 buckets
 * (compiling took 0.45-0.77 s around reads of 1-5 ms, 3M attempts).
 */
export const WITHOUT_JIT = { jit: 'off' } as const;

/**
 * The API's hot-path statements (ingest, status read, the due NOTIFY), run past
 * Prisma (PgStatements) on Prisma's own pool: same connections, same session
 * settings (ingest commits synchronously), only without the raw-query layer.
 * Unnamed behind a transaction pooler, as Prisma's own statements are.
 */
@Injectable()
export class ApiDatabase extends PgStatements {
  constructor(prisma: PrismaService, @Inject(DATABASE_TARGET) target: DatabaseTarget, config: AppConfig) {
    // Directly, the pool's sessions carry the timeouts (PrismaService); behind a pooler each transaction sets them.
    super(prisma.pool, target.pooled ? null : 'api', {}, target.pooled ? timeoutSettings(config) : {}, API_CONFLICT_RETRIES);
  }
}
