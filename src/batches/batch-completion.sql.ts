import { Prisma } from '../generated/prisma/client.js';
import { UNFINISHED } from '../common/states.js';

/**
 * Batch completion, all of it: a batch is complete (`completed_at` set) once none of
 * its callbacks is pending or in flight. Three statements keep that true:
 * - the completer stamps the batches of the callbacks it just finished
 *   (`completeBatches`), after its write-back committed: of two workers finishing
 *   the last callbacks of one batch at once, the later one to commit sees both done;
 * - the maintenance leader sweeps batches whose last write-back crashed before the
 *   stamp (`openBatchesWithNothingLeft`, then `completeBatches`);
 * - a retry re-opens the batches of the callbacks it sends again (`reopenBatches`),
 *   in the retry's own transaction.
 * Each reads a batch's callbacks through `callback_batch_id_status_idx`.
 */

/** Stamps the given batches that have nothing left to send; returns those it stamped. Locks those batch rows. */
export const completeBatches = (batchIds: string[]) => Prisma.sql`
  UPDATE batch b
  -- a batch with no callbacks left at all (purged) is complete now: without the coalesce it stayed open, swept again and again
  SET completed_at = coalesce((SELECT max(c.completed_at) FROM callback c WHERE c.batch_id = b.id), now())
  WHERE b.id = ANY(${batchIds}::uuid[]) AND b.completed_at IS NULL
    AND NOT EXISTS (SELECT 1 FROM callback c WHERE c.batch_id = b.id AND c.status IN ${UNFINISHED})
  RETURNING b.id, b.completed_at AS "completedAt"`;

/**
 * Open batches with nothing left to send, oldest first (reads, locks nothing). The
 * check is a scalar subquery, run per open batch as one probe of
 * callback_batch_id_status_idx: Postgres never turns it into a join. As NOT EXISTS it
 * did, when the batch table's statistics were stale: an anti join over the whole
 * index, 964 ms on a million callbacks (a CI run of the plans test), every sweep.
 */
export const openBatchesWithNothingLeft = (limit: number) => Prisma.sql`
  SELECT b.id FROM batch b
  WHERE b.completed_at IS NULL
    AND (SELECT true FROM callback c WHERE c.batch_id = b.id AND c.status IN ${UNFINISHED} LIMIT 1) IS NULL
  ORDER BY b.created_at
  LIMIT ${limit}`;

/** Clears the stamp of batches that got work again (a retry, a recovery): their ids, or an SQL uuid[] of them. */
export const reopenBatches = (batchIds: string[] | Prisma.Sql) => Prisma.sql`
  UPDATE batch SET completed_at = NULL
  WHERE id = ANY(${Array.isArray(batchIds) ? Prisma.sql`${batchIds}::uuid[]` : batchIds}) AND completed_at IS NOT NULL`;
