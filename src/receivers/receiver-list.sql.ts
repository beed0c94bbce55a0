import { OUTCOME, STATUS, UNFINISHED } from '../model/states.js';
import { Prisma } from '../generated/prisma/client.js';

/** The receivers list's orders: by name, or failing ones first (the longest failing first), then the rest by name. */
export const RECEIVER_SORTS = ['name', 'health'] as const;
export type ReceiverSort = (typeof RECEIVER_SORTS)[number];

/** Where the previous page ended: its last name, and for the health order also its last `failing_since`. */
export interface ReceiverListCursor {
  name: string;
  failingSince?: Date | null;
}

export interface ReceiverListArgs {
  apiKeyId: string;
  limit: number;
  sort: ReceiverSort;
  after?: ReceiverListCursor;
  /** The success rate counts attempts started since then. */
  since: Date;
}

/** A receiver's row with what the list shows of its health. */
export interface ReceiverHealthRow {
  lastSuccessAt: Date | null;
  attempts: number;
  successes: number;
  pending: number;
  inFlight: number;
  held: number;
}

/**
 * One page of a key's receivers with each one's health, in one statement: the page is
 * picked first (`receiver_api_key_id_name_key`; for the health order the key's receivers
 * are sorted in memory, a key has hundreds, not millions), then per receiver of the page
 * two index probes:
 * - its attempts since `since`, counted by outcome from `attempt_receiver_idx`
 *   (receiver_id, started_at) INCLUDE (outcome): index-only once vacuumed;
 * - its unfinished callbacks by status and held, from `callback_receiver_open_idx`, which
 *   holds only those: a receiver's finished callbacks are never read. Their number is
 *   bounded by the key's pending quota (MAX_PENDING_PER_KEY) plus what is in flight.
 * Reads only; locks nothing.
 */
export function listReceiversWithHealth({ apiKeyId, limit, sort, after, since }: ReceiverListArgs): Prisma.Sql {
  const order = (t: string) => (sort === 'health' ? Prisma.raw(`(${t}.failing_since IS NULL), ${t}.failing_since, ${t}.name`) : Prisma.raw(`${t}.name`));
  return Prisma.sql`
    SELECT p.id, p.api_key_id AS "apiKeyId", p.name, p.url, p.description, p.headers, p.timeout_ms AS "timeoutMs",
           p.max_attempts AS "maxAttempts", p.retry_delays_ms AS "retryDelaysMs", p.disabled, p.disabled_reason AS "disabledReason",
           p.disabled_at AS "disabledAt", p.failing_since AS "failingSince", p.last_failure_at AS "lastFailureAt",
           p.last_success_at AS "lastSuccessAt", p.deleted_at AS "deletedAt", p.created_at AS "createdAt", p.updated_at AS "updatedAt",
           a.attempts, a.successes, c.pending, c.in_flight AS "inFlight", c.held
    FROM (
      SELECT r.* FROM receiver r
      WHERE r.api_key_id = ${apiKeyId}::uuid AND r.deleted_at IS NULL AND r.name <> '/operator' ${after ? afterCursor(sort, after) : Prisma.empty}
      ORDER BY ${order('r')}
      LIMIT ${limit}
    ) p
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS attempts, count(*) FILTER (WHERE t.outcome = ${OUTCOME.success})::int AS successes
      FROM attempt t
      WHERE t.receiver_id = p.id AND t.started_at >= ${since}::timestamptz
    ) a
    CROSS JOIN LATERAL (
      SELECT count(*) FILTER (WHERE NOT k.held AND k.status = ${STATUS.pending})::int AS pending,
             count(*) FILTER (WHERE k.status = ${STATUS.in_flight})::int AS in_flight,
             count(*) FILTER (WHERE k.held AND k.status = ${STATUS.pending})::int AS held
      FROM callback k
      WHERE k.receiver_id = p.id AND k.receiver_id IS NOT NULL AND k.status IN ${UNFINISHED}
    ) c
    ORDER BY ${order('p')}`;
}

/** Rows after the cursor in the page's order (the health order puts NULL failing_since last). */
function afterCursor(sort: ReceiverSort, { name, failingSince }: ReceiverListCursor): Prisma.Sql {
  if (sort === 'name') return Prisma.sql`AND r.name > ${name}`;
  if (failingSince == null) return Prisma.sql`AND r.failing_since IS NULL AND r.name > ${name}`;
  return Prisma.sql`AND (r.failing_since IS NULL OR (r.failing_since, r.name) > (${failingSince}::timestamptz, ${name}))`;
}
