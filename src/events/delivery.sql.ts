import { STATUS } from '../model/states.js';
import { pgArray } from '../database/pg-array.js';
import { Prisma } from '../generated/prisma/client.js';
import { dueAt } from '../queue/receiver-hold.sql.js';

/** The event row, as the publish makes it. */
export interface NewEvent {
  id: string;
  apiKeyId: string;
  eventId: string;
  type: string;
  /** The payload as JSON text: what every delivery sends, stored once, on the event. */
  body: string;
  requestHash: string;
  batchId: string;
  /** Its batch's label. */
  label: string;
}

/**
 * An event's deliveries: per subscriber (same index in each array) its callback's id,
 * its receiver and the url and destination (`destinationOf`) the lookup read; the
 * rest is the same for all of them, or comes from the receiver's row as the insert
 * reads it.
 */
export interface NewDeliveries {
  callbackIds: string[];
  receiverIds: string[];
  urls: string[];
  hosts: string[];
  /** The event's own headers (JSON object), laid over each receiver's. */
  headers: string;
  /** 0 high, 1 normal, 2 low. */
  priority: number;
  /** The sender's ordering key; each delivery's is `<receiver name>/<it>` (ordering per receiver). */
  orderingKey: string | null;
  traceparent: string | null;
  /** For a receiver without its own: the event type's, else HTTP_TIMEOUT_MS and DEFAULT_MAX_ATTEMPTS. */
  timeoutMs: number;
  maxAttempts: number;
  /** The event type's retry delays, for a receiver without its own; null: the service's (RETRY_DELAYS_MS, at send time). */
  retryDelaysMs: number[] | null;
}

/** A receiver id no row has (uuidv7 ids are never all zero), as the ingest's statement uses it: the foreign key refuses it. */
const NO_RECEIVER = '00000000-0000-0000-0000-000000000000';

/**
 * Stores an event, its batch and all its deliveries in one statement: one round trip and
 * one commit, no interactive transaction (which would cost four round trips: BEGIN, the
 * ingest's statement, the event's insert, COMMIT).
 *
 * - `e` inserts the event `ON CONFLICT (api_key_id, event_id) DO NOTHING`; the batch is
 *   made from what `e` returns and the deliveries from what the batch's insert returns,
 *   so when another event holds the id (a concurrent publish of the same id waits on that
 *   unique index entry for the first to commit) nothing at all is stored, and the
 *   statement answers no row. An event no one takes has a batch complete at once
 *   (completed_at = created_at), as a batch whose callbacks have all finished is: never
 *   open for the sweep, and taken by the retention purge.
 * - `r` reads the subscribers' rows `FOR SHARE` (by receiver_pkey), as the ingest reads a
 *   batch's receivers: a disable or enable under way (its row locked `FOR UPDATE`, then
 *   its callbacks flipped by its task) is waited for, and its deliveries are stored held
 *   or not as the receiver then is; one that comes after waits for this statement, and
 *   its task sees these rows. A receiver being deleted (`deleted_at` set) or gone gets
 *   its delivery with no such receiver id, so the foreign key refuses the statement
 *   (EventService looks the subscribers up again).
 * - The payload is stored once, as the event's `body` (the JSON text every delivery
 *   sends); each delivery holds no body but `body_event_id`, the event's id, and the
 *   claim reads the body from the event (claim.sql.ts; ARCHITECTURE.md, "Payloads of
 *   events").
 * - Each delivery's columns are made here from that row, where a batch's callback takes
 *   them from the receiver (BatchService): its headers under the event's own (`||`: the
 *   right side wins, as the object spread of a batch does), its timeout, attempts and
 *   retry delays, else the event type's, else the configured ones; the url and
 *   destination are the lookup's (the destination needs the URL parser). So only the ids
 *   and urls cross the wire per delivery, not 16 columns.
 * Locks: the new rows, the subscribers' rows FOR SHARE in id order (the order the
 * write-back and the ingest lock receivers in, so none of them deadlock on two receivers;
 * the receiver's foreign key then takes KEY SHARE on rows already locked; `batch_id` has
 * none, see migration callback_batch_no_fkey), the event's unique index entry on a
 * conflict.
 */
export function insertEventStatement(event: NewEvent, d: NewDeliveries): Prisma.Sql {
  const total = d.callbackIds.length;
  return Prisma.sql`
    WITH e AS (
      INSERT INTO event (id, api_key_id, event_id, type, body, request_hash, batch_id, deliveries)
      VALUES (${event.id}::uuid, ${event.apiKeyId}::uuid, ${event.eventId}, ${event.type}, ${event.body}::text,
              ${event.requestHash}, ${event.batchId}::uuid, ${total}::int)
      ON CONFLICT (api_key_id, event_id) DO NOTHING
      RETURNING batch_id, created_at
    ), b AS (
      INSERT INTO batch (id, api_key_id, label, total, created_at, completed_at, body_bytes)
      SELECT e.batch_id, ${event.apiKeyId}::uuid, ${event.label}, ${total}::int, now(), CASE WHEN ${total}::int = 0 THEN now() END,
             ${Buffer.byteLength(event.body)}::bigint FROM e
      RETURNING id, api_key_id
    ), r AS MATERIALIZED (
      SELECT id, name, headers, timeout_ms, max_attempts, retry_delays_ms, disabled, deleted_at IS NOT NULL AS deleted
      FROM receiver WHERE id = ANY(${pgArray(d.receiverIds)}::uuid[]) ORDER BY id FOR SHARE
    ), c AS (
      INSERT INTO callback (id, batch_id, api_key_id, url, host, method, headers, body_event_id, timeout_ms, max_attempts, retry_delays_ms,
                            status, next_attempt_at, priority, ordering_key, traceparent, receiver_id, held)
      SELECT u.id, b.id, b.api_key_id, u.url, u.host, 'POST', COALESCE(r.headers, '{}'::jsonb) || ${d.headers}::jsonb, ${event.id}::uuid,
             COALESCE(r.timeout_ms, ${d.timeoutMs}::int), COALESCE(r.max_attempts, ${d.maxAttempts}::int),
             COALESCE(NULLIF(r.retry_delays_ms, '{}'::int[]), ${d.retryDelaysMs}::int[]),
             ${STATUS.pending}, ${dueAt(Prisma.sql`now()`, Prisma.sql`COALESCE(r.disabled, false)`)}, ${d.priority}::smallint,
             r.name || '/' || ${d.orderingKey}::text, ${d.traceparent}::text,
             CASE WHEN r.id IS NULL OR r.deleted THEN ${NO_RECEIVER}::uuid ELSE r.id END, COALESCE(r.disabled, false)
      FROM unnest(${pgArray(d.callbackIds)}::uuid[], ${pgArray(d.receiverIds)}::uuid[], ${pgArray(d.urls)}::text[], ${pgArray(d.hosts)}::text[])
           AS u(id, receiver_id, url, host)
      CROSS JOIN b
      LEFT JOIN r ON r.id = u.receiver_id
    )
    SELECT created_at AS "createdAt" FROM e`;
}
