import { Injectable } from '@nestjs/common';
import { PgStatements } from './pg.statements.js';
import { PrismaService } from './prisma.service.js';

/**
 * The API's hot-path statements (ingest, status read, the due NOTIFY), run past
 * Prisma (PgStatements) on Prisma's own pool: same connections, same session
 * settings (ingest commits synchronously), only without the raw-query layer.
 */
@Injectable()
export class ApiDatabase extends PgStatements {
  constructor(prisma: PrismaService) {
    super(prisma.pool, 'api');
  }
}
