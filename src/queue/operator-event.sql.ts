import { STATUS } from '../model/states.js';
import { Prisma } from '../generated/prisma/client.js';
import type { AppConfig } from '../config/app.config.js';
import { dueAt } from './receiver-hold.sql.js';

/** What a stored operator event's delivery takes from the configuration when its receiver sets nothing (HTTP_TIMEOUT_MS, DEFAULT_MAX_ATTEMPTS). */
export interface OperatorEventDefaults {
  timeoutMs: number;
  maxAttempts: number;
}

export const operatorEventDefaults = (config: Pick<AppConfig, 'httpTimeoutMs' | 'defaultMaxAttempts'>): OperatorEventDefaults => ({
  timeoutMs: config.httpTimeoutMs,
  maxAttempts: config.defaultMaxAttempts,
});

/** The name of the receiver row that is a key's operator endpoint: '/' is never in a receiver's name, so no receiver route reaches it. */
export const OPERATOR_RECEIVER = '/operator';

/** The operator event types, in the order the README lists them. */
export const OPERATOR_EVENT_TYPES = [
  'batch.completed',
  'callback.exhausted',
  'receiver.failing',
  'receiver.disabled',
  'receiver.enabled',
  'host.circuit_opened',
  'host.circuit_closed',
  'recovery.completed',
] as const;
export type OperatorEventType = (typeof OPERATOR_EVENT_TYPES)[number];

/** The receivers withOperatorEvents delivers to (`src`: its events), not deleted. */
const endpointRows = Prisma.sql`
      SELECT r.id, r.url, r.headers, r.timeout_ms, r.max_attempts, r.retry_delays_ms, r.disabled
      FROM receiver r
      WHERE r.id IN (SELECT oe.receiver_id FROM src s JOIN operator_endpoint oe ON oe.api_key_id = s.api_key_id
                     UNION SELECT s.notify_receiver_id FROM src s WHERE s.notify_receiver_id IS NOT NULL)
        AND r.deleted_at IS NULL`;

/**
 * Stores operator events with their deliveries, inside the statement (so the transaction)
 * of the state change that causes them: the caller's CTEs (`ctes`, e.g. the batch
 * completion's UPDATE … RETURNING) and `source`, a SELECT over them with one row per
 * event: `api_key_id, type, event_id, payload` (jsonb, the event's `data`) and
 * `notify_url, notify_host, notify_receiver_id` (a batch's own target, or nulls). Each
 * event goes to the key's operator endpoint when it takes the type, and to the notify
 * target; an event nobody takes stores nothing (no event row, no batch). So the event
 * exists exactly when its cause committed: a worker killed before the commit leaves
 * neither, and whoever makes the change later (the maintenance sweep) stores the event
 * then.
 *
 * `event_id` names the cause (`batch.completed:<batch id>`): the insert is `ON CONFLICT
 * (api_key_id, event_id) DO NOTHING`, and the batch and the callbacks are inserted only
 * for the event rows it returned, so even a cause reported twice stores one event. Each
 * event is an `event` row (GET /v1/events lists it), a batch marked `operator_event` (its
 * completion and its callbacks' failures cause no operator events: no event about an
 * event) and one callback per target: an ordinary callback, stored, claimed, signed with
 * its receiver's secret (the operator endpoint's own whsec_), retried and kept in the
 * history like any other; held when its receiver is disabled.
 *
 * Receivers are read last, after the caller's own locks, `FOR KEY SHARE`
 * (ARCHITECTURE.md, "Lock order"). Every flip of `disabled` locks the row `FOR UPDATE`
 * first (the API, the auto-disable), so a flip under way is waited for and the row stored
 * held or not as the receiver then is. Write-backs lock their rows' receivers first,
 * `FOR NO KEY UPDATE` (recordWithHealth): with `FOR SHARE` here, one holding the endpoint's
 * receiver (its own deliveries' outcomes) and waiting for a receiver this transaction
 * holds would close a cycle. `FOR KEY SHARE` does not conflict with `FOR NO KEY UPDATE`,
 * so there is none.
 *
 * `held`: receiver ids (a SELECT) the caller's CTEs hold locked already and may update
 * in the same statement (a write-back's health): those are read without a lock, as a
 * row this statement updated is skipped by a lock taken in it, and its event would get
 * no delivery.
 *
 * Cost when nothing is configured: one probe of operator_endpoint_pkey per source row
 * (the caller's source selects only what changed), and the empty CTEs below.
 */
export function withOperatorEvents(
  ctes: Prisma.Sql,
  source: Prisma.Sql,
  d: OperatorEventDefaults,
  finalSelect: Prisma.Sql,
  { held }: { held?: Prisma.Sql } = {},
): Prisma.Sql {
  return Prisma.sql`
    WITH ${ctes}
    src AS MATERIALIZED (${source}),
    rr AS MATERIALIZED (
      ${
        held
          ? Prisma.sql`
      SELECT * FROM (${endpointRows} AND r.id NOT IN (${held}) FOR KEY SHARE) l
      UNION ALL ${endpointRows} AND r.id IN (${held})`
          : Prisma.sql`${endpointRows} FOR KEY SHARE`
      }
    ), t AS MATERIALIZED (
      SELECT s.api_key_id, s.event_id, r.id AS receiver_id, r.url, oe.host, r.headers, r.timeout_ms, r.max_attempts,
             r.retry_delays_ms, r.disabled
      FROM src s JOIN operator_endpoint oe ON oe.api_key_id = s.api_key_id JOIN rr r ON r.id = oe.receiver_id
      WHERE (oe.event_types IS NULL OR s.type = ANY(oe.event_types)) AND r.url IS NOT NULL
      UNION ALL
      SELECT s.api_key_id, s.event_id, r.id, s.notify_url, s.notify_host, COALESCE(r.headers, '{}'), r.timeout_ms, r.max_attempts,
             r.retry_delays_ms, COALESCE(r.disabled, false)
      FROM src s LEFT JOIN rr r ON r.id = s.notify_receiver_id
      -- a notify receiver deleted since the batch was stored: nothing to send it
      WHERE s.notify_url IS NOT NULL AND (s.notify_receiver_id IS NULL OR r.id IS NOT NULL)
    ), ev AS MATERIALIZED (
      SELECT s.api_key_id, s.type, s.event_id, s.payload, operator_uuidv7() AS id, operator_uuidv7() AS batch_id,
             (SELECT count(*)::int FROM t WHERE t.api_key_id = s.api_key_id AND t.event_id = s.event_id) AS deliveries
      FROM src s
    ), e AS (
      INSERT INTO event (id, api_key_id, event_id, type, payload, request_hash, batch_id, deliveries)
      SELECT id, api_key_id, event_id, type, payload, 'operator', batch_id, deliveries FROM ev WHERE deliveries > 0
      ON CONFLICT (api_key_id, event_id) DO NOTHING
      RETURNING id, api_key_id, event_id, type, payload, batch_id, created_at
    ), eb AS (
      INSERT INTO batch (id, api_key_id, label, total, operator_event)
      SELECT e.batch_id, e.api_key_id, 'operator ' || e.type, ev.deliveries, true FROM e JOIN ev ON ev.id = e.id
      RETURNING id
    ), ec AS (
      INSERT INTO callback (id, batch_id, api_key_id, url, host, method, headers, body, timeout_ms, max_attempts, retry_delays_ms,
                            status, next_attempt_at, priority, receiver_id, held)
      SELECT operator_uuidv7(), e.batch_id, e.api_key_id, t.url, t.host, 'POST',
             t.headers || jsonb_build_object('content-type', 'application/json', 'webhook-event-id', e.event_id, 'webhook-event-type', e.type),
             jsonb_build_object('id', e.event_id, 'type', e.type, 'timestamp', ${iso(Prisma.sql`e.created_at`)}, 'data', e.payload)::text,
             COALESCE(t.timeout_ms, ${d.timeoutMs}::int), COALESCE(t.max_attempts, ${d.maxAttempts}::int), t.retry_delays_ms,
             ${STATUS.pending}, ${dueAt(Prisma.sql`now()`, Prisma.sql`t.disabled`)}, 0, t.receiver_id, t.disabled
      FROM e JOIN t ON t.api_key_id = e.api_key_id AND t.event_id = e.event_id
      RETURNING id
    )
    ${finalSelect}`;
}

/** A final SELECT answering how many operator events were stored (for statements that answer nothing else). */
export const storedEvents = Prisma.sql`SELECT (SELECT count(*)::int FROM e) AS events, (SELECT count(*)::int FROM ec) AS deliveries`;

/** An SQL timestamp as the API writes times: ISO-8601 in UTC with milliseconds (`2026-12-03T15:00:00.123Z`); null stays null. */
export const iso = (at: Prisma.Sql) => Prisma.sql`to_char(${at} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** Epoch milliseconds of an SQL timestamp, as text, for event ids. */
export const epochMs = (at: Prisma.Sql) => Prisma.sql`(floor(extract(epoch FROM ${at}) * 1000)::bigint)::text`;

/** The operator endpoint's receiver id of the key owning each row (an SQL boolean: this receiver is one): its own failures report nothing. */
export const isOperatorReceiver = (receiverId: Prisma.Sql) => Prisma.sql`EXISTS (SELECT 1 FROM operator_endpoint oe WHERE oe.receiver_id = ${receiverId})`;
