import { STATUS, TASK_STATUS, UNFINISHED } from '../common/states.js';
import { Prisma } from '../generated/prisma/client.js';
import { reopenBatches } from '../batches/batch-completion.sql.js';
import { REQUEUE_COLUMNS } from '../callbacks/requeue.sql.js';
import { HELD_SHIFT } from '../receivers/receiver-hold.sql.js';

/**
 * The statements of a task's chunks. A chunk is one statement (TaskRepository.runChunk),
 * so its locks last exactly as long as it runs, never across a round trip to a busy
 * process: the task's row locked `FOR UPDATE SKIP LOCKED` (two runners never run one
 * task's chunks at once; a runner that finds it locked leaves it to the other), at
 * most a chunk's size (CHUNK_SIZES) of callback rows read and locked, their work done, and the task's row
 * moved on, committed together. A crash loses nothing: the next chunk starts where
 * the last committed one ended. Each answers `ran` (false: the task had ended, or
 * another runner held it), `finished`, `changed` (callbacks changed) and `ms` (answer).
 *
 * Lock order, everywhere: the receiver's row, then the task's. A receiver task's
 * chunk reads the receiver `FOR SHARE` first (`rv`; the task's scan refers to it, so
 * it runs first); a PUT or DELETE locks the receiver `FOR UPDATE`, then supersedes
 * its tasks (supersedeReceiverTasks).
 */

/**
 * How many callback rows a chunk reads and locks at most: one of these sizes, chosen
 * by ChunkSizer (task.runner.ts) so each chunk runs for about CHUNK_TARGET_MS on the
 * server at hand. Written into the statement's text (a row limit as a parameter
 * would leave a prepared statement's generic plan guessing): one statement text per
 * size and kind, so a few prepared statements, never one per run.
 */
export const CHUNK_SIZES = [25, 50, 100, 200, 400, 800] as const;
export type ChunkSize = (typeof CHUNK_SIZES)[number];

export const limitOf = (size: ChunkSize) => {
  if (!CHUNK_SIZES.includes(size)) throw new Error(`not a chunk size: ${size}`);
  return Prisma.raw(String(size));
};

export const NO_ID = Prisma.raw(`'00000000-0000-0000-0000-000000000000'::uuid`);
const LAST_ID = Prisma.raw(`'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid`);

/**
 * The receiver's callbacks after `after` in id order, as the range ($r, after) <
 * (receiver_id, id) <= ($r, LAST_ID): a row comparison only `callback_receiver_idx
 * (receiver_id, id)` can serve in order. Written as receiver_id = $r AND id > after,
 * the planner, with fresh statistics of a table most of whose rows are the
 * receiver's, walked the primary key in id order filtering by receiver: a walk
 * through every other receiver's rows in a shared table.
 */
const ofReceiverAfter = (receiverId: string, after: Prisma.Sql) => Prisma.sql`
  receiver_id IS NOT NULL -- the index's predicate, which the planner cannot prove from a row comparison
  AND (receiver_id, id) > (${receiverId}::uuid, ${after}) AND (receiver_id, id) <= (${receiverId}::uuid, ${LAST_ID})`;

/** The task's row, locked for this chunk (`t`), once `after` (a CTE) has run: none when it ended or another runner holds it now. */
export const lockedTask = (id: string, after?: Prisma.Sql) => Prisma.sql`
  t AS MATERIALIZED (
    SELECT id, cursor, created_at, statuses FROM task
    WHERE id = ${id}::uuid AND status = ${TASK_STATUS.running} ${after ? Prisma.sql`AND (SELECT count(*) FROM ${after}) >= 0` : Prisma.empty}
    FOR UPDATE SKIP LOCKED
  )`;

/**
 * Moves the task on (`adv`): `changed` more done, the walk at `cursor` (an SQL
 * value; null keeps it), finished when `finished` (an SQL boolean) holds.
 */
const advance = (changed: Prisma.Sql, cursor: Prisma.Sql, finished: Prisma.Sql) => Prisma.sql`
  adv AS (
    UPDATE task SET done = done + ${changed}, cursor = coalesce(${cursor}, task.cursor), updated_at = now(),
           status = CASE WHEN ${finished} THEN ${TASK_STATUS.finished} ELSE task.status END,
           finished_at = CASE WHEN ${finished} THEN now() ELSE NULL END
    FROM t WHERE task.id = t.id
    RETURNING task.status
  )`;

/**
 * What a chunk answers: `ran`, `finished`, `changed`, and `ms`, how long the statement
 * had run on the server when its answer was made (its locks are held that long, plus
 * the commit). The time the client saw would add the wait for a connection (a
 * pooler's queue) and the client's own stalls, which hold no lock: measured there, a
 * busy pooler made ChunkSizer pick the smallest chunks and keep them.
 */
export const answer = (changed: Prisma.Sql) => Prisma.sql`
  SELECT EXISTS (SELECT 1 FROM t) AS ran, coalesce((SELECT status = ${TASK_STATUS.finished} FROM adv), false) AS finished,
         (${changed})::int AS changed,
         (extract(epoch FROM clock_timestamp() - statement_timestamp()) * 1000)::float8 AS ms`;

/**
 * A chunk of a receiver's disable or enable: its callbacks after the task's cursor in
 * id order (`callback_receiver_idx`; each then by primary key, as `id =
 * ANY(ARRAY(…))`, which leaves the planner no hash join over the table), the
 * unfinished ones of them made held or released (receiver-hold.sql.ts) as the
 * receiver is *now*: its row is read `FOR SHARE`, so a PUT flipping it again waits
 * for the chunk, and a task superseded by a later flip that still ran a chunk did
 * only what the later one wants. Rows already as wanted are not written. Finished
 * when no row is left, or the receiver is gone or being deleted (its delete task does
 * the rest).
 */
export const reconcileHeldChunk = (taskId: string, receiverId: string, size: ChunkSize) => Prisma.sql`
  WITH rv AS MATERIALIZED (
    SELECT disabled FROM receiver WHERE id = ${receiverId}::uuid AND deleted_at IS NULL FOR SHARE
  ), ${lockedTask(taskId, Prisma.sql`rv`)}, c AS MATERIALIZED (
    SELECT id FROM callback
    WHERE EXISTS (SELECT 1 FROM t) AND EXISTS (SELECT 1 FROM rv)
      AND ${ofReceiverAfter(receiverId, Prisma.sql`coalesce((SELECT cursor FROM t), ${NO_ID})`)}
    ORDER BY receiver_id, id LIMIT ${limitOf(size)}
  ), u AS (
    UPDATE callback SET held = rv.disabled,
           next_attempt_at = next_attempt_at + CASE WHEN rv.disabled THEN ${HELD_SHIFT} ELSE -${HELD_SHIFT} END
    FROM rv
    WHERE callback.id = ANY(ARRAY(SELECT id FROM c)) AND callback.status IN ${UNFINISHED} AND callback.held <> rv.disabled
    RETURNING 1
  ), last AS MATERIALIZED (
    SELECT id FROM c ORDER BY id DESC LIMIT 1
  ), ${advance(Prisma.sql`(SELECT count(*) FROM u)::int`, Prisma.sql`(SELECT id FROM last)`, Prisma.sql`NOT EXISTS (SELECT 1 FROM last)`)}
  ${answer(Prisma.sql`SELECT count(*) FROM u`)}`;

/**
 * A chunk of a receiver's delete: its next callbacks (`callback_receiver_idx`),
 * detached from it, the unfinished ones cancelled as `POST /v1/callbacks/:id/cancel`
 * does (a call in flight loses its lease, so its write-back will not land). Detached
 * rows leave the index, so the walk needs no cursor; a batch stored meanwhile cannot
 * add rows (the ingest refuses a receiver marked deleted). With none left, the
 * receiver's row goes (its secrets with it) and the task is finished.
 */
export const detachReceiverChunk = (taskId: string, receiverId: string, size: ChunkSize) => Prisma.sql`
  WITH rv AS MATERIALIZED (
    SELECT id FROM receiver WHERE id = ${receiverId}::uuid FOR SHARE
  ), ${lockedTask(taskId, Prisma.sql`rv`)}, c AS MATERIALIZED (
    SELECT id, status IN ${UNFINISHED} AS open FROM callback
    WHERE EXISTS (SELECT 1 FROM t) AND ${ofReceiverAfter(receiverId, NO_ID)}
    ORDER BY receiver_id, id LIMIT ${limitOf(size)}
    FOR UPDATE
  ), o AS MATERIALIZED (
    SELECT ARRAY(SELECT id FROM c WHERE open) AS ids
  ), u AS (
    UPDATE callback SET receiver_id = NULL,
           status = CASE WHEN callback.id = ANY(o.ids) THEN ${STATUS.cancelled} ELSE callback.status END,
           completed_at = CASE WHEN callback.id = ANY(o.ids) THEN now() ELSE callback.completed_at END,
           done_at = CASE WHEN callback.id = ANY(o.ids) THEN now() ELSE callback.done_at END,
           lease_owner = CASE WHEN callback.id = ANY(o.ids) THEN NULL ELSE callback.lease_owner END,
           lease_expires_at = CASE WHEN callback.id = ANY(o.ids) THEN NULL ELSE callback.lease_expires_at END,
           held = false,
           last_error = CASE WHEN callback.id = ANY(o.ids) THEN 'cancelled: its receiver was deleted' ELSE callback.last_error END
    FROM o WHERE callback.id = ANY(ARRAY(SELECT id FROM c))
    RETURNING callback.id = ANY(o.ids) AS open
  ), gone AS (
    DELETE FROM receiver
    WHERE id = ${receiverId}::uuid AND deleted_at IS NOT NULL AND EXISTS (SELECT 1 FROM t) AND NOT EXISTS (SELECT 1 FROM c)
  ), ${advance(Prisma.sql`(SELECT count(*) FROM u WHERE open)::int`, Prisma.sql`NULL::uuid`, Prisma.sql`NOT EXISTS (SELECT 1 FROM c)`)}
  ${answer(Prisma.sql`SELECT count(*) FROM u WHERE open`)}`;

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
