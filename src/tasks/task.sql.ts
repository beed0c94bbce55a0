import { TASK_STATUS } from '../model/states.js';
import { Prisma } from '../generated/prisma/client.js';

/**
 * What every task's chunk statement shares; each kind's own is its feature's (TaskKinds).
 * A chunk is one statement (TaskRepository.runChunk), so its locks never span a round
 * trip to a busy process. It locks the task's row `FOR UPDATE SKIP LOCKED` (a runner
 * finding it locked leaves it to the other), reads and locks at most a chunk's size
 * (CHUNK_SIZES) of callback rows, does their work and moves the task's row on, in one
 * commit, so a crash loses nothing. It answers `ran` (false: the task had ended or
 * another runner held it), `finished`, `changed`, `ms` (answer). Lock order everywhere:
 * the receiver's row, then the task's. A receiver task's chunk reads the receiver
 * `FOR SHARE` first (`rv`, which the task's scan refers to, so it runs first); a PUT or
 * DELETE locks it `FOR UPDATE`, then supersedes its tasks (supersedeReceiverTasks).
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
export const LAST_ID = Prisma.raw(`'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid`);

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
export const advance = (changed: Prisma.Sql, cursor: Prisma.Sql, finished: Prisma.Sql) => Prisma.sql`
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
