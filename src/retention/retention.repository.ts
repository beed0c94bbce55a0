import { Injectable } from '@nestjs/common';
import { FINISHED } from '../common/states.js';
import { ApiDatabase } from '../database/api-database.js';
import { Prisma } from '../generated/prisma/client.js';

@Injectable()
export class RetentionRepository {
  constructor(private readonly db: ApiDatabase) {}

  /**
   * Deletes up to `limit` finished callbacks of the queue's partition (`callback_live`:
   * finished before the history was partitioned, so `done_at` is still 'infinity'; the
   * others go with their partitions) finished before `cutoff`; their attempts go with
   * them (the statement trigger `callback_attempts_delete`, through
   * `attempt_callback_id_number_idx`; attempts have no foreign key). Found through
   * `callback_live_finished_idx (completed_at) WHERE status IN (finished)`. Locks: the
   * chosen rows only, `FOR UPDATE SKIP LOCKED`, so a purge never waits on (or
   * blocks) a write-back or a retry touching a row, and two purging workers take
   * disjoint rows. A finished row is only changed by a manual retry, which the lock
   * orders: the purge re-checks the status after taking it.
   */
  purgeFinishedCallbacks(cutoff: Date, limit: number): Promise<number> {
    return this.db.execute(Prisma.sql`
      WITH doomed AS (
        SELECT id FROM callback_live
        WHERE status IN ${FINISHED} AND completed_at < ${cutoff}
        ORDER BY completed_at
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      )
      DELETE FROM callback c USING doomed
      WHERE c.id = doomed.id AND c.done_at = 'infinity' AND c.status IN ${FINISHED}`);
  }

  /**
   * Deletes up to `limit` batches completed before `cutoff` with no callback left.
   * Found through `batch_completed_idx`; the emptiness check reads
   * `callback_batch_id_status_idx`. Locks the chosen batch rows (SKIP LOCKED). A
   * completed batch gets no new callbacks, so an empty one stays empty.
   */
  purgeEmptyBatches(cutoff: Date, limit: number): Promise<number> {
    return this.db.execute(Prisma.sql`
      WITH doomed AS (
        SELECT b.id FROM batch b
        WHERE b.completed_at < ${cutoff}
          AND NOT EXISTS (SELECT 1 FROM callback c WHERE c.batch_id = b.id)
        ORDER BY b.completed_at
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      )
      DELETE FROM batch b USING doomed WHERE b.id = doomed.id`);
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
