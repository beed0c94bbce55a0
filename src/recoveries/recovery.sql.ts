import { RECOVERABLE, STATUS, TASK_STATUS } from '../model/states.js';
import { Prisma } from '../generated/prisma/client.js';
import { reopenBatches } from '../queue/batch-completion.sql.js';
import { REQUEUE_COLUMNS } from '../queue/requeue.sql.js';
import { answer, limitOf, lockedTask, type ChunkSize } from '../tasks/task.sql.js';

/** What a recovery matches: the key's callbacks in `statuses`, accepted in the id window, of the receiver, destination and batch given (null: any). */
export interface RecoveryFilter {
  apiKeyId: string;
  receiverId: string | null;
  host: string | null;
  batchId: string | null;
  /** The window [since, until) on acceptance time; since null: from the first. */
  since: Date | string | null;
  until: Date | string;
  /** 0 high, 1 normal, 2 low. */
  priority: number;
}

/**
 * The lowest UUIDv7 of a millisecond (a timestamptz, SQL): its 48-bit time, then zeros
 * where even the version digit goes, so below every id made in that millisecond and
 * above every id made before it. Callback ids are UUIDv7 of their acceptance
 * (src/common/uuid.ts), so a window of acceptance times is a range of ids, which the
 * indexes on id serve. Null for null. A time before 1970 is the lowest id (its negative
 * epoch made a hex of 16 digits, an id above every other: a window from 1969 matched none).
 */
export const uuidFloorSql = (at: Prisma.Sql) =>
  Prisma.sql`(lpad(to_hex(greatest((extract(epoch FROM ${at}) * 1000)::bigint, 0)), 12, '0') || '00000000000000000000')::uuid`;

const afterId = (f: RecoveryFilter) => Prisma.sql`coalesce(${uuidFloorSql(Prisma.sql`${f.since}::timestamptz`)}, '00000000-0000-0000-0000-000000000000'::uuid)`;
const beforeId = (f: RecoveryFilter) => uuidFloorSql(Prisma.sql`${f.until}::timestamptz`);

const RECOVERABLE_SQL = Prisma.sql`(${Prisma.join(RECOVERABLE.map((s) => STATUS[s]))})`;

/** The filters the walk's index cannot serve, on the `callback` row at hand (each a no-op when null). */
const scoped = (f: RecoveryFilter) => Prisma.sql`
  (${f.receiverId}::uuid IS NULL OR callback.receiver_id = ${f.receiverId}::uuid)
  AND (${f.host}::text IS NULL OR callback.host = ${f.host}::text)
  AND (${f.batchId}::uuid IS NULL OR callback.batch_id = ${f.batchId}::uuid)`;

/**
 * How many callbacks a recovery would send again now (its `matched`, and the
 * preview): the key's rows in `statuses` within the window, through
 * `callback_unsuccessful_idx (api_key_id, status, id) WHERE failed or cancelled`, whose
 * range the window bounds; the other filters are read from each row. A plain read,
 * no locks; its time grows with the key's failed rows in the window (the walk the
 * recovery's chunks then do, 25-800 rows at a time).
 */
export const countRecoverable = (f: RecoveryFilter, statuses: string[]) => Prisma.sql`
  SELECT count(*)::int AS n FROM callback
  WHERE status IN ${RECOVERABLE_SQL} AND api_key_id = ${f.apiKeyId}::uuid AND status = ANY(${statuses}::text[])
    AND id > ${afterId(f)} AND id < ${beforeId(f)}
    AND ${scoped(f)}`;

/**
 * A recovery's chunk (frame: task.sql.ts). `c`, unlocked, walks
 * `callback_unsuccessful_idx` for the task's current status (`statuses[1]`) from its
 * cursor inside the window, as a row comparison the index serves in order: at most a
 * chunk's size of index entries, whatever the other filters drop. Rows that still match
 * (status, filters, finished before the recovery began: one it sent that failed again is
 * not sent twice) are sent again (REQUEUE_COLUMNS: same id, so same `webhook-id`; held
 * while their receiver is disabled) at the recovery's priority, marked with its id, their
 * batches re-opened; the UPDATE re-checks each row as it locks it. The cursor moves to
 * the last row read; with none left it goes to the next status from the window's start,
 * or finishes. Locks, in a retry's order: the task's row, the callbacks, their batches.
 */
export const recoveryChunk = (taskId: string, f: RecoveryFilter, size: ChunkSize) => Prisma.sql`
  WITH ${lockedTask(taskId)}, c AS MATERIALIZED (
    SELECT id FROM callback
    WHERE EXISTS (SELECT 1 FROM t) AND status IN ${RECOVERABLE_SQL}
      AND (api_key_id, status, id) > (${f.apiKeyId}::uuid, (SELECT statuses[1] FROM t), coalesce((SELECT cursor FROM t), ${afterId(f)}))
      AND (api_key_id, status, id) < (${f.apiKeyId}::uuid, (SELECT statuses[1] FROM t), ${beforeId(f)})
    ORDER BY api_key_id, status, id LIMIT ${limitOf(size)}
  ), u AS (
    UPDATE callback SET ${REQUEUE_COLUMNS}, priority = ${f.priority}::smallint, recovery_id = ${taskId}::uuid
    WHERE callback.id = ANY(ARRAY(SELECT id FROM c)) AND callback.status = (SELECT statuses[1] FROM t)
      AND callback.completed_at <= (SELECT created_at FROM t) AND ${scoped(f)}
    RETURNING callback.batch_id
  ), reopened AS (
    ${reopenBatches(Prisma.sql`ARRAY(SELECT DISTINCT batch_id FROM u)`)}
  ), last AS MATERIALIZED (
    -- the highest id read, without a sort (which chunkSettings' enable_sort = off would cost at 10^10 on
    -- 15-17): as text in "C" order, which is uuid order (no max(uuid) before Postgres 18)
    SELECT max(id::text COLLATE "C")::uuid AS id FROM c HAVING count(*) > 0
  ), adv AS (
    UPDATE task SET done = done + (SELECT count(*) FROM u)::int, updated_at = now(),
           cursor = (SELECT id FROM last),
           statuses = CASE WHEN EXISTS (SELECT 1 FROM last) THEN task.statuses ELSE task.statuses[2:] END,
           status = CASE WHEN NOT EXISTS (SELECT 1 FROM last) AND cardinality(task.statuses) <= 1 THEN ${TASK_STATUS.finished} ELSE task.status END,
           finished_at = CASE WHEN NOT EXISTS (SELECT 1 FROM last) AND cardinality(task.statuses) <= 1 THEN now() END
    FROM t WHERE task.id = t.id
    RETURNING task.status
  )
  ${answer(Prisma.sql`SELECT count(*) FROM u`)}`;

/** A recovery's requeued callbacks by their status now (`callback_recovery_idx`). */
export const recoveryProgress = (id: string) => Prisma.sql`
  SELECT status, count(*)::int AS n FROM callback WHERE recovery_id = ${id}::uuid GROUP BY status`;
