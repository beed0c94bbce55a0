import { Prisma } from '../generated/prisma/client.js';
import { CLOCK_MARGIN_MS } from '../common/clock.js';

/**
 * A batch's attempts, read by its callbacks: GET /v1/batches/{id} (its span),
 * batch.completed (the same span, batch-completion.sql.ts) and the batch's timeline. The
 * history is partitioned by time (`attempt` by `started_at`, `callback` by `done_at`:
 * src/retention), and a batch's callbacks finish, and their attempts start, at or after
 * its `created_at`. So each read is bounded below by `attemptsSince`, which prunes every
 * older partition, and reaches the attempts one callback at a time (a LATERAL probe of
 * `attempt_callback_id_number_idx`): a batch costs its own rows, whatever the history
 * holds. Given a plain join, the planner would hash-join a large batch with every attempt
 * and probe every partition's index for a small one (bench/README.md, "a batch's reads
 * from its own partitions").
 */

/**
 * How far before the batch's `created_at` (Postgres's clock, as it stored the batch)
 * its rows' times may be: `started_at` and a finished callback's `done_at` are the
 * sending worker's clock, which may run behind the database server's (CLOCK_MARGIN_MS).
 */

/** The lower bound of a batch's attempts' `started_at` and its callbacks' `done_at`, as a value (plan-time pruning). */
export const attemptsSince = (createdAt: Date) => Prisma.sql`${new Date(createdAt.getTime() - CLOCK_MARGIN_MS)}::timestamptz`;

/** The same bound from a batch row's column in the statement (run-time pruning, per batch). */
export const attemptsSinceOf = (createdAt: Prisma.Sql) => Prisma.sql`(${createdAt} - ${CLOCK_MARGIN_MS}::int * interval '1 millisecond')`;

/**
 * `first_start` and `last_end`: the batch's first attempt start and last attempt end
 * (null before any attempt landed). Only callbacks with attempts are probed.
 */
export const batchSpan = (batchId: Prisma.Sql, since: Prisma.Sql) => Prisma.sql`
  SELECT min(x.first_start) AS first_start, max(x.last_end) AS last_end
  FROM callback c
  CROSS JOIN LATERAL (
    SELECT min(a.started_at) AS first_start, max(a.started_at + a.duration_ms * interval '1 millisecond') AS last_end
    FROM attempt a WHERE a.callback_id = c.id AND a.started_at >= ${since}
  ) x
  WHERE c.batch_id = ${batchId} AND c.done_at >= ${since} AND c.attempts > 0`;

/** The batch's callbacks by status, as a JSON object of the statuses it has (`callback_batch_id_status_idx`). */
export const batchCounts = (batchId: Prisma.Sql, since: Prisma.Sql) => Prisma.sql`
  SELECT coalesce(jsonb_object_agg(s.status, s.n), '{}') FROM (
    SELECT c.status, count(*)::int AS n FROM callback c WHERE c.batch_id = ${batchId} AND c.done_at >= ${since} GROUP BY c.status
  ) s`;

/**
 * GET /v1/batches/{id}'s read: `counts` (batchCounts) beside the span (batchSpan), in
 * one statement, so both see the same commits (read apart, a write-back landing
 * between them showed a batch completed with no attempts yet).
 */
export const batchProgress = (batchId: string, createdAt: Date) => {
  const id = Prisma.sql`${batchId}::uuid`;
  const since = attemptsSince(createdAt);
  return Prisma.sql`
    SELECT (${batchCounts(id, since)}) AS counts, s.first_start AS "firstStartAt", s.last_end AS "lastEndAt"
    FROM (${batchSpan(id, since)}) s`;
};

/** Every attempt of the batch with its callback's columns, by callback id and attempt number. */
export const batchAttemptRows = (batchId: Prisma.Sql, since: Prisma.Sql) => Prisma.sql`
  SELECT c.id AS "callbackId", c.url, c.external_id AS "externalId", a.number, a.started_at AS "startedAt",
         a.duration_ms AS "durationMs", a.status_code AS "statusCode", a.outcome, a.dns_ms AS "dnsMs",
         a.connect_ms AS "connectMs", a.tls_ms AS "tlsMs", a.first_byte_ms AS "firstByteMs"
  FROM callback c
  -- OFFSET 0 keeps the probe per callback: pulled up into a join, the planner hash-joined the batch against
  -- every attempt of the partitions since it (on a running service, up to days of them)
  CROSS JOIN LATERAL (SELECT a.* FROM attempt a WHERE a.callback_id = c.id AND a.started_at >= ${since} OFFSET 0) a
  WHERE c.batch_id = ${batchId} AND c.done_at >= ${since} AND c.attempts > 0
  ORDER BY c.id, a.number`;
