import { STATUS } from '../../common/states.js';
import { pgArray } from '../../database/pg-array.js';
import { Prisma } from '../../generated/prisma/client.js';
import { dueAt } from '../../queue/receiver-hold.sql.js';
import type { ReceiverHealth, RecordedOutcome } from '../outcome.types.js';

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
  return Prisma.sql`${writeBack(owner, rows)}, attempts AS (${insertAttempts(owner)}) SELECT id FROM moved`;
}

/**
 * recordOutcomes of a write-back whose every attempt succeeded, with the health they
 * say of their receivers (`latest`: each one's latest success here), in one statement
 * and one round trip. Health merges as mergeHealth (receiver-health.policy.ts) merges
 * successes alone: the latest success wins and ends a failure record older than it
 * (one whose last failure is newer it keeps, from that failure on), and a healthy
 * receiver's `last_success_at` moves only once it is `successWriteMs` behind.
 *
 * Lock order: first (`locked`, read by a one-time filter on `moved` before any callback
 * row is touched) the receivers these successes may change, in id order, `FOR NO KEY
 * UPDATE` as lockReceivers: those failing, never successful, with a failure after their
 * last success, or with a success recorded `successWriteMs` or more before this one.
 * The others (most: a healthy receiver with calls landing all the time) are neither
 * locked nor written; a lock would make nothing more exact, as a failure write-back
 * meanwhile merges as it would after this (mergeHealth: a failure less than
 * `successWriteMs` older than an unwritten success still counts). Then the outcomes,
 * then the locked rows' merge from the attempts that landed, written where it changes
 * them; a receiver gone meanwhile gets nothing. Successes start no failure record, so
 * no operator event can follow (OutcomeRepository runs any other write-back in a
 * transaction, merged in Node). The same ids as recordOutcomes come back.
 */
export function recordSuccesses(owner: string, rows: RecordedOutcome[], latest: ReadonlyMap<string, Date>, successWriteMs: number): Prisma.Sql {
  const within = Prisma.sql`${successWriteMs}::int * interval '1 millisecond'`;
  const locked = Prisma.sql`
    locked AS MATERIALIZED (
      SELECT r.id, r.last_success_at, r.failing_since, r.last_failure_at
      FROM receiver r
      JOIN unnest(${pgArray([...latest.keys()])}::uuid[], ${pgArray([...latest.values()].map((d) => d.getTime()))}::float8[]) AS h(id, success_ms)
        ON r.id = h.id
      WHERE r.failing_since IS NOT NULL OR r.last_success_at IS NULL OR r.last_success_at <= ${at(Prisma.sql`h.success_ms`)} - ${within}
         OR r.last_failure_at > r.last_success_at
      ORDER BY r.id FOR NO KEY UPDATE OF r
    ),`;
  return Prisma.sql`
    ${writeBack(owner, rows, { locked, gate: Prisma.sql`AND (SELECT count(*) FROM locked) >= 0` })},
    attempts AS (${insertAttempts(owner)} RETURNING callback_id),
    merged AS (
      SELECT l.id, l.last_success_at AS stored, l.failing_since, x.success, f.failing,
             f.failing IS NULL AND coalesce(l.last_success_at > x.success - ${within}, false) AS throttled
      FROM (SELECT m.receiver_id AS id, max(${at(Prisma.sql`o.started_ms`)}) AS success
            FROM moved m JOIN o ON o.callback_id = m.id WHERE m.receiver_id IS NOT NULL GROUP BY m.receiver_id) h
      JOIN locked l ON l.id = h.id
      CROSS JOIN LATERAL (SELECT greatest(l.last_success_at, h.success) AS success) x
      -- the earliest failure recorded after the latest success: the row's first, or its last (a success landing between them)
      CROSS JOIN LATERAL (SELECT min(t) AS failing FROM (VALUES (l.failing_since), (l.last_failure_at)) v(t) WHERE t > x.success) f
    ), health AS (
      UPDATE receiver r
      SET last_success_at = CASE WHEN m.throttled THEN m.stored ELSE m.success END, failing_since = m.failing
      FROM merged m
      WHERE r.id = m.id AND (m.failing IS DISTINCT FROM m.failing_since OR (m.success IS DISTINCT FROM m.stored AND NOT m.throttled))
    )
    SELECT callback_id AS id FROM attempts`;
}

const at = (ms: Prisma.Sql) => Prisma.sql`to_timestamp(${ms} / 1000.0)`;

/**
 * The CTEs of a write-back, for insertAttempts to follow: `o`, the rows as one typed
 * array per column, and `moved`, the callback rows that landed. `locked` goes first,
 * and `gate` on `moved`'s WHERE.
 */
function writeBack(owner: string, rows: RecordedOutcome[], extra: { locked?: Prisma.Sql; gate?: Prisma.Sql } = {}): Prisma.Sql {
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
    WITH ${extra.locked ?? Prisma.empty} o AS (
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
      RETURNING c.id, c.api_key_id, c.host, c.receiver_id
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

/**
 * Locks the receivers of a write-back's rows, in id order, first in its transaction,
 * and answers their health as it then is (the rows stay locked to the commit, so it is
 * what mergeHealth merges into): the API locks a receiver before its callbacks
 * (disable, delete), so the write-back must not hold callback rows while it waits for
 * a receiver (a deadlock, broken after `deadlock_timeout` by failing one of the two).
 * `FOR NO KEY UPDATE`, the lock its health update takes anyway: it excludes other
 * write-backs of the receiver, the ingest's `FOR SHARE` and the API's `FOR UPDATE`,
 * but not the `FOR KEY SHARE` with which operator events read their endpoint's
 * receiver (withOperatorEvents), which this transaction may do after this lock, and
 * another write-back while holding it.
 */
export const lockReceivers = (ids: string[]) => Prisma.sql`
  SELECT id AS "receiverId", last_success_at AS "lastSuccessAt", failing_since AS "failingSince", last_failure_at AS "lastFailureAt"
  FROM receiver WHERE id = ANY(${ids}::uuid[]) ORDER BY id FOR NO KEY UPDATE`;

/**
 * Writes receivers' health as mergeHealth (receiver-health.policy.ts) decided it,
 * only the rows that change, in the write-back's transaction after its UPDATE
 * (outcome.repository.ts), on rows lockReceivers locked: the health of exactly the
 * attempts that landed, or neither. It keeps `failing_since` (the first failure after
 * the latest success), `last_failure_at` and `last_success_at` for the auto-disable
 * task (maintenance: RECEIVER_DISABLE_AFTER_HOURS).
 */
export function writeReceiverHealth(rows: ReceiverHealth[]): Prisma.Sql {
  const col = <K extends keyof ReceiverHealth>(k: K) => rows.map((r) => r[k]);
  return Prisma.sql`
    UPDATE receiver r
    SET last_success_at = h.last_success_at, failing_since = h.failing_since, last_failure_at = h.last_failure_at
    FROM unnest(${col('receiverId')}::uuid[], ${col('lastSuccessAt')}::timestamptz[],
                ${col('failingSince')}::timestamptz[], ${col('lastFailureAt')}::timestamptz[])
      AS h(id, last_success_at, failing_since, last_failure_at)
    WHERE r.id = h.id`;
}
