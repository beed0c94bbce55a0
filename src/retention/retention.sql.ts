import { attemptsSinceOf } from '../queue/batch-attempts.sql.js';
import { FINISHED } from '../model/states.js';
import { Prisma } from '../generated/prisma/client.js';

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
export const purgeFinishedCallbacks = (cutoff: Date, limit: number) => Prisma.sql`
  WITH doomed AS (
    SELECT id FROM callback_live
    WHERE status IN ${FINISHED} AND completed_at < ${cutoff}
    ORDER BY completed_at
    LIMIT ${limit}
    FOR UPDATE SKIP LOCKED
  )
  DELETE FROM callback c USING doomed
  WHERE c.id = doomed.id AND c.done_at = 'infinity' AND c.status IN ${FINISHED}`;

/**
 * Deletes up to `limit` batches completed before `cutoff` with no callback left.
 * Found through `batch_completed_idx`, oldest first. Each is checked by a scalar
 * subquery, which the planner cannot turn into a join over the whole history (a `NOT
 * EXISTS` became a hash anti-join reading every callback's batch id): one probe of
 * `callback_batch_id_status_idx` per partition, in the index's order so that it is an
 * index scan that stops at the first row (a bitmap scan reads all of a batch's
 * entries). So the statement reads the batches it looks at, not the history. Locks the
 * chosen batch rows (SKIP LOCKED). A completed batch gets no new callbacks, so an empty
 * one stays empty; what keeps a batch here is its callbacks in the partition holding
 * the cutoff, at most one partition's worth of batches.
 */
export const purgeEmptyBatches = (cutoff: Date, limit: number) => Prisma.sql`
  WITH doomed AS (
    SELECT b.id FROM batch b
    WHERE b.completed_at < ${cutoff}
      AND (SELECT true FROM callback c WHERE c.batch_id = b.id AND c.done_at >= ${attemptsSinceOf(Prisma.sql`b.created_at`)} ORDER BY c.status LIMIT 1) IS NULL
    ORDER BY b.completed_at
    LIMIT ${limit}
    FOR UPDATE SKIP LOCKED
  )
  DELETE FROM batch b USING doomed WHERE b.id = doomed.id`;
