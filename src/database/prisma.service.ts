import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import type pg from 'pg';
import { CaughtErrors } from '../logging/caught-errors.js';
import { PrismaClient } from '../generated/prisma/client.js';
import { DATABASE_TARGET, type DatabaseTarget } from './database.target.js';
import { AppConfig } from '../config/app.config.js';
import { answerWithinMs, openPool, timeoutSettings } from './pg.statements.js';
import { statementNamer } from './statement.names.js';

/** Connections in the pool shared by the API and the dispatcher of one process. */
const POOL_SIZE = 20;

/**
 * The one Prisma client of the process. Only repositories use it. Its connection
 * pool is made here and also serves the API's hot-path statements, which run past
 * Prisma on the same connections (ApiDatabase).
 */
@Injectable()
export class PrismaService extends PrismaClient implements OnApplicationShutdown {
  readonly pool: pg.Pool;

  constructor(@Inject(DATABASE_TARGET) target: DatabaseTarget, caught: CaughtErrors, config: AppConfig) {
    // The timeouts as session settings on a direct connection; behind a pooler ApiDatabase's transactions set them
    // (and Prisma's own short statements rely on the role's settings: docs/operations.md, Postgres).
    const pool = openPool(
      target.url,
      POOL_SIZE,
      (error) => caught.record('api_pool_idle_connection', error, 'dropped from the pool; the next statement opens another'),
      target.pooled ? {} : timeoutSettings(config),
      answerWithinMs(config),
    );
    super({ adapter: new PrismaPg(pool, target.pooled ? {} : { statementNameGenerator: statementNamer('prisma') }) });
    this.pool = pool;
  }

  /** Last of all, after the worker drained and wrote back in onModuleDestroy. */
  async onApplicationShutdown(): Promise<void> {
    await this.$disconnect();
    await this.pool.end();
  }
}
