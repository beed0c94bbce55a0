import { Injectable } from '@nestjs/common';
import { ApiDatabase } from '../database/api-database.js';
import { Prisma } from '../generated/prisma/client.js';
import * as sql from './retention.sql.js';

@Injectable()
export class RetentionRepository {
  constructor(private readonly db: ApiDatabase) {}

  /** Deletes a slice of at most `limit` rows (retention.sql.ts); returns how many it deleted. */
  purgeFinishedCallbacks(cutoff: Date, limit: number): Promise<number> {
    return this.db.execute(sql.purgeFinishedCallbacks(cutoff, limit));
  }

  /** Deletes a slice of at most `limit` rows (retention.sql.ts); returns how many it deleted. */
  purgeEmptyBatches(cutoff: Date, limit: number): Promise<number> {
    return this.db.execute(sql.purgeEmptyBatches(cutoff, limit));
  }

  /**
   * Deletes the stored latency buckets (latency_rollup) that start before `before`: a
   * bucket stored whole would outlive attempts retention dropped. Through
   * `latency_rollup_start_idx`; no row of it is locked elsewhere for long.
   */
  purgeLatencyRollups(before: Date): Promise<number> {
    return this.db.execute(Prisma.sql`DELETE FROM latency_rollup WHERE start < ${before}`);
  }
}
