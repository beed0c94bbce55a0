import { STATUS } from '../../common/states.js';
import { pgArray } from '../../database/pg-array.js';
import { Prisma } from '../../generated/prisma/client.js';
import { dueAt } from '../../receivers/receiver-hold.sql.js';
import type { RecordedOutcome } from '../outcome.repository.js';

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
 * column: Postgres reads them several times faster than the same rows as one JSON
 * document (jsonb_to_recordset: 3 ms against 0.4 for 200 rows). What the callback
 * row already holds (its key, host and receiver) is taken from it, not sent again,
 * and times go as epoch milliseconds: each column sent costs the worker its text
 * encoding and Postgres its parsing, per row. Locks the callback rows it updates.
 * Returns the callback ids that landed. The text is the same for any number of rows
 * (none included), so it is prepared once per connection. A retry of a row held
 * meanwhile (its receiver disabled while the call ran) is due HELD_SHIFT later
 * (receivers/receiver-hold.sql.ts).
 */
export function recordOutcomes(owner: string, rows: RecordedOutcome[]): Prisma.Sql {
  // Each column as one array literal (pgArray), as the ingest sends its columns: pg's
  // own conversion of array parameters was ~3% of the worker's profile (the change
  // alone moved nothing measurable in bench:peer).
  type Dated = 'nextAttemptAt' | 'completedAt' | 'startedAt';
  const col = (k: Exclude<keyof RecordedOutcome, Dated | 'responseHeaders'>) => pgArray(rows.map((r) => r[k]));
  const epochMs = (k: Dated) => pgArray(rows.map((r) => r[k]?.getTime() ?? null));
  // The response headers (objects) go as one JSON array, not as an array literal of
  // JSON texts: quoting each document's quotes for the literal cost ten times
  // JSON.stringify's own work and allocated per quote. JSON null is SQL NULL.
  const headers = JSON.stringify(rows.map((r) => r.responseHeaders ?? null));
  const at = (ms: Prisma.Sql) => Prisma.sql`to_timestamp(${ms} / 1000.0)`;
  return Prisma.sql`
    WITH o AS (
      SELECT * FROM unnest(
        ${col('callbackId')}::uuid[], ${col('number')}::int[], ${col('status')}::text[], ${epochMs('nextAttemptAt')}::float8[],
        ${epochMs('completedAt')}::float8[], ${epochMs('startedAt')}::float8[], ${col('durationMs')}::float8[], ${col('dnsMs')}::float8[],
        ${col('connectMs')}::float8[], ${col('tlsMs')}::float8[], ${col('tunnelMs')}::float8[], ${col('firstByteMs')}::float8[],
        ${col('statusCode')}::int[], ${col('outcome')}::text[], ${col('error')}::text[],
        ARRAY(SELECT nullif(h.e, 'null'::jsonb) FROM jsonb_array_elements(${headers}::jsonb) WITH ORDINALITY AS h(e, i) ORDER BY h.i),
        ${col('responseBody')}::text[]
      ) AS o(callback_id, number, status, next_attempt_ms, completed_ms, started_ms,
             duration_ms, dns_ms, connect_ms, tls_ms, tunnel_ms, first_byte_ms, status_code, outcome, error,
             response_headers, response_body)
    ), moved AS (
      UPDATE callback c
      SET status = o.status, attempts = o.number,
          next_attempt_at = CASE WHEN o.next_attempt_ms IS NULL THEN c.next_attempt_at
                                 ELSE ${dueAt(at(Prisma.sql`o.next_attempt_ms`), Prisma.sql`c.held`)} END,
          completed_at = ${at(Prisma.sql`o.completed_ms`)}, last_status_code = o.status_code, last_error = o.error,
          lease_owner = NULL, lease_expires_at = NULL
      FROM o
      WHERE c.id = o.callback_id AND c.lease_owner = ${owner}
      RETURNING c.id, c.api_key_id, c.host, c.receiver_id
    )
    INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, dns_ms, connect_ms,
                         tls_ms, tunnel_ms, first_byte_ms, status_code, outcome, error, response_headers, response_body, worker,
                         receiver_id)
    SELECT o.callback_id, m.api_key_id, m.host, o.number, ${at(Prisma.sql`o.started_ms`)}, o.duration_ms, o.dns_ms, o.connect_ms,
           o.tls_ms, o.tunnel_ms, o.first_byte_ms, o.status_code, o.outcome, o.error, o.response_headers, o.response_body, ${owner},
           m.receiver_id
    FROM o JOIN moved m ON m.id = o.callback_id
    RETURNING callback_id AS id`;
}

/**
 * Hands leased rows back untouched (shutdown, or rows that waited too long in
 * memory): pending again, due as they were. Only rows still leased to `owner` move.
 * Locks the rows it updates.
 */
export const releaseClaims = (owner: string, ids: string[]) => Prisma.sql`
  UPDATE callback SET status = ${STATUS.pending}, lease_owner = NULL, lease_expires_at = NULL
  WHERE id = ANY(${ids}::uuid[]) AND lease_owner = ${owner}`;

/** What one write-back's attempts say of one receiver's health (receiverHealth in outcome.repository.ts). */
export interface ReceiverHealth {
  receiverId: string;
  /** The latest attempt succeeded: the receiver is not failing. */
  succeededLast: boolean;
  /** A success came before the failures that followed it (so an older failing_since no longer holds). */
  hadSuccess: boolean;
  /** The first failure after the last success here (or the first here); null when none failed. */
  failingSince: Date | null;
  lastFailureAt: Date | null;
}

/**
 * Keeps each receiver's `failing_since` (first failure since its last success) and
 * `last_failure_at`, for the auto-disable task (maintenance: RECEIVER_DISABLE_AFTER_HOURS).
 * Runs after a write-back that had attempts of receivers, only for them. Locks those
 * receiver rows in id order first, so two workers writing back for the same
 * receivers cannot deadlock; rows that would not change are not written.
 */
export function recordReceiverHealth(rows: ReceiverHealth[]): Prisma.Sql {
  const col = <K extends keyof ReceiverHealth>(k: K) => rows.map((r) => r[k]);
  return Prisma.sql`
    WITH h AS (
      SELECT * FROM unnest(${col('receiverId')}::uuid[], ${col('succeededLast')}::boolean[], ${col('hadSuccess')}::boolean[],
                           ${col('failingSince')}::timestamptz[], ${col('lastFailureAt')}::timestamptz[])
        AS h(id, succeeded_last, had_success, failing_since, last_failure_at)
    ), locked AS (
      -- = ANY(array): the primary key scan gives the id order, so the lock order needs no sort
      -- (the worker's sessions run with enable_sort=off; see dispatch-database.ts).
      SELECT r.id FROM receiver r WHERE r.id = ANY(${col('receiverId')}::uuid[]) ORDER BY r.id FOR UPDATE
    )
    UPDATE receiver r
    SET failing_since = CASE WHEN h.succeeded_last THEN NULL
                             WHEN h.had_success THEN h.failing_since
                             ELSE coalesce(r.failing_since, h.failing_since) END,
        last_failure_at = greatest(r.last_failure_at, h.last_failure_at)
    FROM h JOIN locked l ON l.id = h.id
    WHERE r.id = h.id AND NOT (h.succeeded_last AND r.failing_since IS NULL)`;
}
