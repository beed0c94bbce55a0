import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/prisma/client.js';
import { statementNamer } from './statement.names.js';

export const DATABASE_URL = Symbol('DATABASE_URL');

/** Connections in the pool shared by the API and the dispatcher of one process. */
const POOL_SIZE = 20;

/** The one Prisma client of the process. Only repositories use it. */
@Injectable()
export class PrismaService extends PrismaClient implements OnApplicationShutdown {
  constructor(@Inject(DATABASE_URL) databaseUrl: string) {
    super({
      adapter: new PrismaPg({ connectionString: databaseUrl, max: POOL_SIZE, connectionTimeoutMillis: 5000 }, { statementNameGenerator: statementNamer('prisma') }),
    });
  }

  /** Last of all, after the dispatcher drained and wrote back in onModuleDestroy. */
  async onApplicationShutdown(): Promise<void> {
    await this.$disconnect();
  }
}
