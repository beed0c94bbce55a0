import { STATUS, UNFINISHED } from '../model/states.js';
import { Prisma } from '../generated/prisma/client.js';
import { HELD_SHIFT } from '../queue/receiver-hold.sql.js';
import { advance, answer, LAST_ID, limitOf, lockedTask, NO_ID, type ChunkSize } from '../tasks/task.sql.js';

/** The chunk statements of a receiver's tasks (kinds receiver.disable, receiver.enable and receiver.delete; task.sql.ts for the frame). */

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
