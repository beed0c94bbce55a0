import { Prisma } from '../generated/prisma/client.js';
import { STATUS, UNFINISHED, UNFINISHED_RANGE } from '../model/states.js';
import { attemptsSinceOf, batchSpan } from './batch-attempts.sql.js';
import { iso, withOperatorEvents, type OperatorEventDefaults } from './operator-event.sql.js';

/**
 * Batch completion, all of it: a batch is complete (`completed_at` set) once none of its
 * callbacks is pending or in flight; three statements keep that true:
 * - the completer stamps its just-finished callbacks' batches (`completeBatches`) after
 *   its write-back commits: of two workers finishing a batch's last callbacks at once,
 *   the later to commit sees both done;
 * - the maintenance leader sweeps batches whose last write-back crashed before the stamp
 *   (`openBatchesWithNothingLeft`, then `completeBatches`);
 * - a retry re-opens its callbacks' batches in its own transaction (`reopenBatches`).
 * Each reads a batch's callbacks through `callback_batch_id_status_idx`, in the
 * partitions from the batch's time on (batch-attempts.sql.ts).
 */

/**
 * Stamps the given batches that have nothing left to send; returns those it stamped.
 * Locks those batch rows. A batch is stamped once (`completed_at IS NULL`: of two
 * stamps at once, the second waits for the first's row lock and then no longer
 * matches), and its batch.completed operator event is stored in the same statement
 * (withOperatorEvents), so it exists exactly when the stamp does: once per batch (its
 * id names the event), whichever worker or the sweep stamps it, and a worker killed
 * before the commit leaves both to the sweep. Counts and makespan are read only for
 * batches someone is told of (a notify target, or the key's operator endpoint).
 */
export const completeBatches = (batchIds: string[], d: OperatorEventDefaults) =>
  withOperatorEvents(
    Prisma.sql`
      done AS (
        UPDATE batch b
        -- a batch with no callbacks left at all (purged) is complete now: without the coalesce it stayed open, swept again and again
        SET completed_at = coalesce((SELECT max(c.completed_at) FROM callback c
                                     WHERE c.batch_id = b.id AND c.done_at >= ${attemptsSinceOf(Prisma.sql`b.created_at`)}), now())
        WHERE b.id = ANY(${batchIds}::uuid[]) AND b.completed_at IS NULL
          -- unfinished rows are the queue's alone (done_at 'infinity'): its partition only
          AND NOT EXISTS (SELECT 1 FROM callback c WHERE c.batch_id = b.id AND c.status IN ${UNFINISHED} AND c.done_at = 'infinity')
        RETURNING b.id, b.api_key_id, b.label, b.total, b.created_at, b.completed_at, b.notify_url, b.notify_host,
                  b.notify_receiver_id, b.operator_event
      ), told AS MATERIALIZED (
        SELECT * FROM done d
        WHERE NOT d.operator_event
          AND (d.notify_url IS NOT NULL OR EXISTS (SELECT 1 FROM operator_endpoint oe WHERE oe.api_key_id = d.api_key_id))
      ),`,
    Prisma.sql`
      SELECT d.api_key_id, 'batch.completed' AS type, 'batch.completed:' || d.id::text AS event_id,
             jsonb_build_object('batchId', d.id, 'label', d.label, 'total', d.total, 'counts', n.counts, 'createdAt', ${iso(Prisma.sql`d.created_at`)},
                                'completedAt', ${iso(Prisma.sql`d.completed_at`)},
                                'makespanMs', round(extract(epoch FROM s.last_end - s.first_start) * 1000)) AS payload,
             d.notify_url, d.notify_host, d.notify_receiver_id
      FROM told d
      CROSS JOIN LATERAL (
        SELECT jsonb_build_object(${STATUS.pending}::text, count(*) FILTER (WHERE c.status = ${STATUS.pending}),
                                  ${STATUS.in_flight}::text, count(*) FILTER (WHERE c.status = ${STATUS.in_flight}),
                                  ${STATUS.succeeded}::text, count(*) FILTER (WHERE c.status = ${STATUS.succeeded}),
                                  ${STATUS.failed}::text, count(*) FILTER (WHERE c.status = ${STATUS.failed}),
                                  ${STATUS.cancelled}::text, count(*) FILTER (WHERE c.status = ${STATUS.cancelled})) AS counts
        FROM callback c WHERE c.batch_id = d.id AND c.done_at >= ${attemptsSinceOf(Prisma.sql`d.created_at`)}) n
      -- as GET /v1/batches/{id} reads it: first attempt start to last attempt end
      CROSS JOIN LATERAL (${batchSpan(Prisma.sql`d.id`, attemptsSinceOf(Prisma.sql`d.created_at`))}) s`,
    d,
    Prisma.sql`SELECT id, completed_at AS "completedAt" FROM done`,
  );

/**
 * Open batches with nothing left to send, oldest first (reads, locks nothing). The
 * check is a scalar subquery, run per open batch as one probe of
 * callback_batch_id_status_idx: Postgres never turns it into a join. As NOT EXISTS it
 * did, when the batch table's statistics were stale: an anti join over the whole
 * index, 964 ms on a million callbacks (a CI run of the plans test), every sweep.
 * The probe is ordered by status, which only the index gives for free (on a range of
 * statuses: UNFINISHED_RANGE): unordered, with a batch's rows estimated at a tenth of
 * the table, a LIMIT 1 looked cheapest as a scan of the table that stops at the first
 * match, and read the whole table per open batch when they lie together (578 ms for 11
 * open batches over 100,000 pending rows; 0.3 ms now).
 */
export const openBatchesWithNothingLeft = (limit: number) => Prisma.sql`
  SELECT b.id FROM batch b
  WHERE b.completed_at IS NULL
    AND (SELECT true FROM callback c WHERE c.batch_id = b.id AND c.status ${UNFINISHED_RANGE} AND c.done_at = 'infinity' ORDER BY c.status LIMIT 1) IS NULL
  ORDER BY b.created_at
  LIMIT ${limit}`;

/** Clears the stamp of batches that got work again (a retry, a recovery): their ids, or an SQL uuid[] of them. */
export const reopenBatches = (batchIds: string[] | Prisma.Sql) => Prisma.sql`
  UPDATE batch SET completed_at = NULL
  WHERE id = ANY(${Array.isArray(batchIds) ? Prisma.sql`${batchIds}::uuid[]` : batchIds}) AND completed_at IS NOT NULL`;
