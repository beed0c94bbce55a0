import { Prisma } from '../generated/prisma/client.js';
import { reopenBatches } from '../queue/batch-completion.sql.js';
import { REQUEUE_COLUMNS } from '../queue/requeue.sql.js';
import { advance, answer, limitOf, lockedTask, type ChunkSize } from '../tasks/task.sql.js';

/**
 * A chunk of a batch retry: its callbacks in one of `statuses` that finished before
 * the task began (`callback_batch_id_status_idx`), sent again as
 * `POST /v1/callbacks/:id/retry` does (pending, due now, one more attempt allowed,
 * held while their receiver is disabled), the batch re-opened. A retried row leaves
 * the statuses, and one that finishes again meanwhile finished after the task began:
 * so the walk needs no cursor, and no callback is retried twice by one task.
 */
export const retryBatchChunk = (taskId: string, batchId: string, statuses: string[], size: ChunkSize) => Prisma.sql`
  WITH ${lockedTask(taskId)}, c AS MATERIALIZED (
    SELECT id FROM callback
    WHERE EXISTS (SELECT 1 FROM t) AND batch_id = ${batchId}::uuid AND status = ANY(${statuses}::text[])
      AND completed_at <= (SELECT created_at FROM t)
    LIMIT ${limitOf(size)}
    FOR UPDATE
  ), u AS (
    UPDATE callback
    SET ${REQUEUE_COLUMNS}
    WHERE callback.id = ANY(ARRAY(SELECT id FROM c))
    RETURNING 1
  ), reopened AS (
    ${reopenBatches(Prisma.sql`ARRAY(SELECT ${batchId}::uuid WHERE EXISTS (SELECT 1 FROM c))`)}
  ), ${advance(Prisma.sql`(SELECT count(*) FROM u)::int`, Prisma.sql`NULL::uuid`, Prisma.sql`NOT EXISTS (SELECT 1 FROM c)`)}
  ${answer(Prisma.sql`SELECT count(*) FROM u`)}`;
