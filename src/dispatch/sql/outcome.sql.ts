import { STATUS } from '../../model/states.js';
import { pgArray } from '../../database/pg-array.js';
import { Prisma } from '../../generated/prisma/client.js';
import { exhaustedSource, failingSource } from '../../queue/operator-causes.sql.js';
import { withOperatorEvents, type OperatorEventDefaults } from '../../queue/operator-event.sql.js';
import { dueAt } from '../../queue/receiver-hold.sql.js';
import type { RecordedOutcome } from '../outcome.types.js';

/**
 * How a claimed row leaves its worker: with an outcome (`recordOutcomes`) or handed
 * back untouched (`releaseClaims`). Both match rows by primary key AND lease owner,
 * so a worker that lost a row's lease (expired and reaped, or the callback was
 * cancelled) changes nothing: a row holds a lease exactly while it is in flight
 * (constraint `callback_lease_in_flight_check`). The status is deliberately not
 * named: rows are found by primary key, never through an index on `status`, whose
 * stale statistics would make the planner scan every in-flight row.
 */

/**
 * Many outcomes in one statement: callback rows move to their next state and their
 * attempts are inserted, only for the rows the UPDATE matched. One typed array per
 * column, which Postgres reads faster than the same rows as one JSON document. What
 * the callback row already holds (key, host, receiver) is not sent again, and times go
 * as epoch milliseconds: each column sent costs encoding and parsing, per row. Locks
 * the callback rows it updates. Returns the ids that landed (with an attempt, or
 * without one when their transform cancelled them). The text is the same for any
 * number of rows, so it is prepared once per connection. A retry of a row held
 * meanwhile (receiver disabled while the call ran) is due HELD_SHIFT later
 * (queue/receiver-hold.sql.ts).
 */
export function recordOutcomes(owner: string, rows: RecordedOutcome[]): Prisma.Sql {
  return Prisma.sql`WITH ${writeBack(owner, rows)}, attempts AS (${insertAttempts(owner)}) SELECT id FROM moved`;
}

/** Epoch milliseconds (SQL) as a timestamp. */
const at = (ms: Prisma.Sql) => Prisma.sql`to_timestamp(${ms} / 1000.0)`;

/** A healthy receiver's success less than this newer than the recorded one is not written (healthMerge). */
export const SUCCESS_WRITE_MS = 1_000;

/**
 * recordOutcomes of a write-back whose every attempt succeeded, with the health they
 * say of their receivers (`latest`: each one's latest success here), in one statement
 * (healthMerge); successes start no failure record, so no operator event follows.
 * Lock order: first (`locked`, before any callback row) the receivers these successes
 * may change, in id order, `FOR NO KEY UPDATE` as recordWithHealth locks them: those
 * failing, never successful, with a failure after their last success, or with a
 * success recorded SUCCESS_WRITE_MS or more before this one. The others (most: a
 * healthy receiver with calls landing all the time) are neither locked nor written; a
 * failure write-back meanwhile merges as it would after this (a failure less than
 * SUCCESS_WRITE_MS older than an unwritten success still counts).
 */
export function recordSuccesses(owner: string, rows: RecordedOutcome[], latest: ReadonlyMap<string, Date>): Prisma.Sql {
  return Prisma.sql`
    WITH locked AS MATERIALIZED (
      SELECT r.id, r.last_success_at, r.failing_since, r.last_failure_at
      FROM receiver r
      JOIN unnest(${pgArray([...latest.keys()])}::uuid[], ${pgArray([...latest.values()].map((d) => d.getTime()))}::float8[]) AS h(id, success_ms)
        ON r.id = h.id
      WHERE r.failing_since IS NOT NULL OR r.last_success_at IS NULL OR r.last_success_at <= ${at(Prisma.sql`h.success_ms`)} - ${WITHIN}
         OR r.last_failure_at > r.last_success_at
      ORDER BY r.id FOR NO KEY UPDATE OF r
    ), ${writeBack(owner, rows, { gate: LOCKED_FIRST })},
    attempts AS (${insertAttempts(owner)} RETURNING callback_id),
    ${healthMerge}
    SELECT callback_id AS id FROM attempts`;
}

/**
 * recordOutcomes of any other write-back with receivers or failures: the outcomes, the
 * health they say of their receivers (healthMerge), and the operator events they cause
 * (callback.exhausted of the rows failed for good that landed, receiver.failing of the
 * receivers whose failure record they start), in one statement, so once per cause.
 * Lock order: the receivers of the rows, in id order, `FOR NO KEY UPDATE` (`locked`:
 * the API locks a receiver before its callbacks, in a disable or delete, so a
 * write-back must not hold callback rows while it waits for one; the lock its health
 * update takes anyway); then the callback rows; last, the operator endpoint receivers
 * it does not hold already, `FOR KEY SHARE` (withOperatorEvents).
 */
export function recordWithHealth(owner: string, rows: RecordedOutcome[], receivers: string[], d: OperatorEventDefaults): Prisma.Sql {
  return withOperatorEvents(
    Prisma.sql`
      locked AS MATERIALIZED (
        SELECT id, last_success_at, failing_since, last_failure_at
        FROM receiver WHERE id = ANY(${pgArray(receivers)}::uuid[]) ORDER BY id FOR NO KEY UPDATE
      ),
      ${writeBack(owner, rows, {
        gate: LOCKED_FIRST,
        returning: Prisma.sql`, c.batch_id, c.external_id, c.url, c.attempts, c.last_status_code, c.last_error, c.completed_at, c.status`,
      })},
      attempts AS (${insertAttempts(owner)}),
      ${healthMerge},`,
    Prisma.sql`${exhaustedSource(Prisma.sql`moved`, Prisma.sql`true`)} UNION ALL ${failingSource(Prisma.sql`health`, Prisma.sql`r.started_failing`)}`,
    d,
    Prisma.sql`SELECT id FROM moved`,
    { held: Prisma.sql`SELECT id FROM locked` },
  );
}

const WITHIN = Prisma.sql`${SUCCESS_WRITE_MS}::int * interval '1 millisecond'`;
const LOCKED_FIRST = Prisma.sql`AND (SELECT count(*) FROM locked) >= 0`;

/**
 * Receivers' health from the attempts that landed (`moved` and `o`, of a write-back),
 * merged into the rows `locked` holds, and written where it changes them (`health`,
 * which returns each changed row and `started_failing`). Per receiver, these attempts
 * say: their latest success, and their first and last failure after it (every failure
 * when none succeeded). Write-backs land in any order (several workers, each
 * buffering), so the row is merged by time, not by arrival: the latest success wins;
 * `failing_since` is the earliest failure known after it (the row's first or last,
 * these attempts' first or last), and `last_failure_at` the latest. A healthy
 * receiver's `last_success_at` moves only once it is SUCCESS_WRITE_MS behind (a row
 * write per second, not per write-back). A receiver gone meanwhile gets nothing.
 */
const healthMerge = Prisma.sql`
    seen AS (
      SELECT m.receiver_id AS id, ${at(Prisma.sql`o.started_ms`)} AS started, o.outcome = 'success' AS ok
      FROM moved m JOIN o ON o.callback_id = m.id WHERE m.receiver_id IS NOT NULL AND o.outcome IS NOT NULL
    ), here AS (
      SELECT s.id, s.success,
             min(seen.started) FILTER (WHERE NOT seen.ok AND (s.success IS NULL OR seen.started > s.success)) AS first_failure,
             max(seen.started) FILTER (WHERE NOT seen.ok AND (s.success IS NULL OR seen.started > s.success)) AS last_failure
      FROM (SELECT id, max(started) FILTER (WHERE ok) AS success FROM seen GROUP BY id) s JOIN seen ON seen.id = s.id
      GROUP BY s.id, s.success
    ), merged AS (
      SELECT l.id, l.last_success_at AS stored_success, l.failing_since AS stored_failing, l.last_failure_at AS stored_last_failure,
             x.success, x.last_failure, f.failing,
             f.failing IS NULL AND coalesce(l.last_success_at > x.success - ${WITHIN}, false) AS throttled
      FROM here h JOIN locked l ON l.id = h.id
      CROSS JOIN LATERAL (SELECT greatest(l.last_success_at, h.success) AS success, greatest(l.last_failure_at, h.last_failure) AS last_failure) x
      -- the earliest failure known after the latest success: the row's first, or its last (a success landing between them), or these attempts'
      CROSS JOIN LATERAL (
        SELECT min(t) AS failing FROM (VALUES (l.failing_since), (l.last_failure_at), (h.first_failure), (h.last_failure)) v(t)
        WHERE x.success IS NULL OR t > x.success
      ) f
    ), health AS (
      UPDATE receiver r
      SET last_success_at = CASE WHEN m.throttled THEN m.stored_success ELSE m.success END, failing_since = m.failing,
          last_failure_at = m.last_failure
      FROM merged m
      WHERE r.id = m.id
        AND (m.failing IS DISTINCT FROM m.stored_failing OR m.last_failure IS DISTINCT FROM m.stored_last_failure
             OR (m.success IS DISTINCT FROM m.stored_success AND NOT m.throttled))
      RETURNING r.id, r.api_key_id, r.name, r.deleted_at, r.failing_since, r.last_failure_at, r.last_success_at,
                m.stored_failing IS NULL AND m.failing IS NOT NULL AS started_failing
    )`;

/**
 * The CTEs of a write-back, for insertAttempts to follow: `o`, the rows as one typed
 * array per column, and `moved`, the callback rows that landed (returning `returning`
 * too). `gate` goes on `moved`'s WHERE.
 */
function writeBack(owner: string, rows: RecordedOutcome[], extra: { gate?: Prisma.Sql; returning?: Prisma.Sql } = {}): Prisma.Sql {
  // Each column as one array literal (pgArray), as the ingest sends its columns: pg's
  // own conversion of array parameters was ~3% of the worker's profile (the change
  // alone moved nothing measurable in bench:peer).
  type Dated = 'nextAttemptAt' | 'completedAt' | 'startedAt';
  const col = (k: Exclude<keyof RecordedOutcome, Dated | 'responseHeaders' | 'transformed'>) => pgArray(rows.map((r) => r[k] ?? null));
  const epochMs = (k: Dated) => pgArray(rows.map((r) => r[k]?.getTime() ?? null));
  // The response headers (objects) go as one JSON array, not as an array literal of
  // JSON texts: quoting each document's quotes for the literal cost ten times
  // JSON.stringify's own work and allocated per quote. JSON null is SQL NULL.
  const headers = JSON.stringify(rows.map((r) => r.responseHeaders ?? null));
  // The requests transforms made (src/transforms), the same way; all null (`[null,…]`) when no row was transformed.
  const transformed = JSON.stringify(rows.map((r) => r.transformed ?? null));
  return Prisma.sql`
    o AS (
      SELECT * FROM unnest(
        ${col('callbackId')}::uuid[], ${col('number')}::int[], ${col('status')}::text[], ${epochMs('nextAttemptAt')}::float8[],
        ${epochMs('completedAt')}::float8[], ${epochMs('startedAt')}::float8[], ${col('durationMs')}::float8[], ${col('dnsMs')}::float8[],
        ${col('connectMs')}::float8[], ${col('tlsMs')}::float8[], ${col('tunnelMs')}::float8[], ${col('firstByteMs')}::float8[],
        ${col('statusCode')}::int[], ${col('outcome')}::text[], ${col('error')}::text[],
        ARRAY(SELECT nullif(h.e, 'null'::jsonb) FROM jsonb_array_elements(${headers}::jsonb) WITH ORDINALITY AS h(e, i) ORDER BY h.i),
        ${col('responseBody')}::text[],
        ARRAY(SELECT nullif(t.e, 'null'::jsonb) FROM jsonb_array_elements(${transformed}::jsonb) WITH ORDINALITY AS t(e, i) ORDER BY t.i),
        ${col('auth')}::text[], ${col('tokenMs')}::float8[]
      ) AS o(callback_id, number, status, next_attempt_ms, completed_ms, started_ms,
             duration_ms, dns_ms, connect_ms, tls_ms, tunnel_ms, first_byte_ms, status_code, outcome, error,
             response_headers, response_body, transformed, auth, token_ms)
    ), moved AS (
      UPDATE callback c
      SET status = o.status, attempts = o.number,
          next_attempt_at = CASE WHEN o.next_attempt_ms IS NULL THEN c.next_attempt_at
                                 ELSE ${dueAt(at(Prisma.sql`o.next_attempt_ms`), Prisma.sql`c.held`)} END,
          completed_at = ${at(Prisma.sql`o.completed_ms`)}, done_at = COALESCE(${at(Prisma.sql`o.completed_ms`)}, 'infinity'),
          last_status_code = o.status_code, last_error = o.error,
          lease_owner = NULL, lease_expires_at = NULL
      FROM o
      WHERE c.id = o.callback_id AND c.lease_owner = ${owner} AND c.done_at = 'infinity' ${extra.gate ?? Prisma.empty}
      RETURNING c.id, c.api_key_id, c.host, c.receiver_id ${extra.returning ?? Prisma.empty}
    )`;
}

/** The attempts of the rows `moved` landed (writeBack); a row without an outcome made none (its transform cancelled it). */
const insertAttempts = (owner: string) => Prisma.sql`
    INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, dns_ms, connect_ms,
                         tls_ms, tunnel_ms, first_byte_ms, status_code, outcome, error, response_headers, response_body, worker,
                         receiver_id, transformed, auth, token_ms)
    SELECT o.callback_id, m.api_key_id, m.host, o.number, ${at(Prisma.sql`o.started_ms`)}, o.duration_ms, o.dns_ms, o.connect_ms,
           o.tls_ms, o.tunnel_ms, o.first_byte_ms, o.status_code, o.outcome, o.error, o.response_headers, o.response_body, ${owner},
           m.receiver_id, o.transformed, o.auth, o.token_ms
    FROM o JOIN moved m ON m.id = o.callback_id
    WHERE o.outcome IS NOT NULL`;

/**
 * Hands leased rows back untouched (shutdown, or rows that waited too long in
 * memory): pending again, due as they were. Only rows still leased to `owner` move.
 * Locks the rows it updates.
 */
export const releaseClaims = (owner: string, ids: string[]) => Prisma.sql`
  UPDATE callback SET status = ${STATUS.pending}, lease_owner = NULL, lease_expires_at = NULL
  WHERE id = ANY(${ids}::uuid[]) AND lease_owner = ${owner} AND done_at = 'infinity'`;
