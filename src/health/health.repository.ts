import { Injectable } from '@nestjs/common';
import { ApiDatabase } from '../database/api-database.js';
import { Prisma } from '../generated/prisma/client.js';

@Injectable()
export class HealthRepository {
  constructor(private readonly db: ApiDatabase) {}

  /** Names of migrations the database has finished applying. */
  async appliedMigrations(): Promise<string[]> {
    const rows = await this.db.query<{ migration_name: string }>(Prisma.sql`
      SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`);
    return rows.map((r) => r.migration_name);
  }
}
