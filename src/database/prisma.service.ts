import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/prisma/client.js';

export const DATABASE_URL = Symbol('DATABASE_URL');

/** Connections in the pool shared by the API and the dispatcher of one process. */
const POOL_SIZE = 20;
/** Distinct statements prepared by name; any beyond run unnamed (parsed and planned every time). */
const MAX_NAMED_STATEMENTS = 500;

/**
 * Names each statement by its text, so every pooled connection parses and plans it
 * once and then only binds and executes it. The hot-path statements have a fixed
 * text whatever the number of rows (they take arrays), and their planning cost as
 * much as running them: the status read of 20 callbacks took ~0.43 ms prepared
 * against ~0.8–1.3 ms unnamed. Statement texts that vary without end (a Prisma
 * query with an `IN` list of any length) stop getting names at the cap.
 */
function statementNamer(): (query: { sql: string }) => string {
  const names = new Map<string, string>();
  return ({ sql }) => {
    let name = names.get(sql);
    if (name === undefined && names.size < MAX_NAMED_STATEMENTS) names.set(sql, (name = `prisma_${names.size}`));
    return name ?? ''; // '' is the unnamed statement
  };
}

/** The one Prisma client of the process. Only repositories use it. */
@Injectable()
export class PrismaService extends PrismaClient implements OnApplicationShutdown {
  constructor(@Inject(DATABASE_URL) databaseUrl: string) {
    super({
      adapter: new PrismaPg({ connectionString: databaseUrl, max: POOL_SIZE, connectionTimeoutMillis: 5000 }, { statementNameGenerator: statementNamer() }),
    });
  }

  /** Last of all, after the dispatcher drained and wrote back in onModuleDestroy. */
  async onApplicationShutdown(): Promise<void> {
    await this.$disconnect();
  }
}
