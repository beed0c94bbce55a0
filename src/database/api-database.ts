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
