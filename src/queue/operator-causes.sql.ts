import { STATUS, UNFINISHED_RANGE } from '../model/states.js';
import { Prisma } from '../generated/prisma/client.js';
import { epochMs, iso, isOperatorReceiver, storedEvents, withOperatorEvents, type OperatorEventDefaults } from './operator-event.sql.js';

/**
 * The operator events that follow a change already made in the caller's transaction
 * (withOperatorEvents says how an event is stored). Each reads the rows it reports,
 * as the change left them, by primary key; each leaves out keys without an operator
 * endpoint (one probe of operator_endpoint_pkey) and what the operator endpoint's
 * own receiver, or an operator event's delivery, did (no event about an event).
 */

const NO_NOTIFY = Prisma.sql`NULL::text AS notify_url, NULL::text AS notify_host, NULL::uuid AS notify_receiver_id`;
const hasEndpoint = (apiKeyId: Prisma.Sql) => Prisma.sql`EXISTS (SELECT 1 FROM operator_endpoint oe WHERE oe.api_key_id = ${apiKeyId})`;

/**
 * The callback.exhausted source over rows `c` of `from` (the RETURNING of an UPDATE in
 * the same statement, whose changes the table does not show the statement: the
 * write-back's, the lease reaper's) chosen by `where`. A write-back lands only while its
 * worker holds the lease, so once per failure.
 */
export const exhaustedSource = (from: Prisma.Sql, where: Prisma.Sql) => Prisma.sql`
  SELECT c.api_key_id, 'callback.exhausted' AS type, 'callback.exhausted:' || c.id::text || ':' || c.attempts::text AS event_id,
         jsonb_build_object('callbackId', c.id, 'batchId', c.batch_id, 'externalId', c.external_id, 'url', c.url,
                            'receiver', CASE WHEN r.deleted_at IS NULL THEN r.name END, 'attempts', c.attempts,
                            'lastStatusCode', c.last_status_code, 'lastError', c.last_error, 'completedAt', ${iso(Prisma.sql`c.completed_at`)}) AS payload,
         ${NO_NOTIFY}
  FROM ${from} c JOIN batch b ON b.id = c.batch_id LEFT JOIN receiver r ON r.id = c.receiver_id
  WHERE ${where} AND c.status = ${STATUS.failed} AND NOT b.operator_event AND ${hasEndpoint(Prisma.sql`c.api_key_id`)}`;

/**
 * The receiver.failing source over receivers `r` of `from` (the RETURNING of the
 * write-back's health UPDATE, whose changes the table does not show the statement)
 * chosen by `where`: those whose failure record the write-back just started
 * (`failing_since` was null, is set now). Once per stretch of failures, however many
 * failures follow (the debounce is the record itself: a success ends the stretch).
 */
export const failingSource = (from: Prisma.Sql, where: Prisma.Sql) => Prisma.sql`
  SELECT r.api_key_id, 'receiver.failing' AS type, 'receiver.failing:' || r.id::text || ':' || ${epochMs(Prisma.sql`r.failing_since`)} AS event_id,
         jsonb_build_object('receiver', r.name, 'failingSince', ${iso(Prisma.sql`r.failing_since`)}, 'lastFailureAt', ${iso(Prisma.sql`r.last_failure_at`)},
                            'lastSuccessAt', ${iso(Prisma.sql`r.last_success_at`)}) AS payload,
         ${NO_NOTIFY}
  FROM ${from} r
  WHERE ${where} AND r.failing_since IS NOT NULL AND r.deleted_at IS NULL
    AND NOT ${isOperatorReceiver(Prisma.sql`r.id`)} AND ${hasEndpoint(Prisma.sql`r.api_key_id`)}`;

/**
 * receiver.disabled or receiver.enabled for receivers just flipped in the caller's
 * transaction (the auto-disable, a PUT): the flip happens once under the receiver's
 * row lock, so the event does. `auto` says who disabled it.
 */
export const toggledReceivers = (ids: string[], disabled: boolean, auto: boolean, d: OperatorEventDefaults) => {
  const type = disabled ? 'receiver.disabled' : 'receiver.enabled';
  // the enable clears disabled_at; the flip's own transaction time names it then
  const at = disabled ? Prisma.sql`r.disabled_at` : Prisma.sql`now()`;
  const payload = disabled
    ? Prisma.sql`jsonb_build_object('receiver', r.name, 'reason', r.disabled_reason, 'auto', ${auto}::boolean, 'disabledAt', ${iso(Prisma.sql`r.disabled_at`)},
                                    'failingSince', ${iso(Prisma.sql`r.failing_since`)})`
    : Prisma.sql`jsonb_build_object('receiver', r.name, 'enabledAt', ${iso(Prisma.sql`now()`)})`;
  return withOperatorEvents(
    Prisma.empty,
    Prisma.sql`
      SELECT r.api_key_id, ${type}::text AS type, ${type}::text || ':' || r.id::text || ':' || ${epochMs(at)} AS event_id, ${payload} AS payload,
             ${NO_NOTIFY}
      FROM receiver r
      WHERE r.id = ANY(${ids}::uuid[]) AND r.disabled = ${disabled}::boolean AND r.deleted_at IS NULL
        AND NOT ${isOperatorReceiver(Prisma.sql`r.id`)} AND ${hasEndpoint(Prisma.sql`r.api_key_id`)}`,
    d,
    storedEvents,
  );
};

/** A breaker transition a report just wrote (HostLimitsRepository.updateBreakers). */
export interface BreakerTransition {
  host: string;
  opened: boolean;
  /** opened: when it opened (names the event); closed: null */
  openedAt: Date | null;
  openUntil: Date | null;
  failures: number;
}

/**
 * host.circuit_opened (closed → open) and host.circuit_closed (→ closed from open or
 * half-open), in the breaker report's transaction, which decided them under the host
 * rows' locks: once per transition. Hosts are shared by every key, so they go to
 * admin keys only, each with an operator endpoint; one event per such key.
 */
export const breakerTransitions = (list: BreakerTransition[], d: OperatorEventDefaults) =>
  withOperatorEvents(
    Prisma.empty,
    Prisma.sql`
      SELECT k.id AS api_key_id, x.type, x.type || ':' || md5(x.host) || ':' || ${epochMs(Prisma.sql`coalesce(x.opened_at, now())`)} AS event_id,
             CASE WHEN x.opened
                  THEN jsonb_build_object('host', x.host, 'consecutiveFailures', x.failures, 'openedAt', ${iso(Prisma.sql`x.opened_at`)}, 'openUntil', ${iso(Prisma.sql`x.open_until`)})
                  ELSE jsonb_build_object('host', x.host, 'closedAt', ${iso(Prisma.sql`now()`)}) END AS payload,
             ${NO_NOTIFY}
      FROM unnest(${list.map((t) => t.host)}::text[], ${list.map((t) => t.opened)}::boolean[], ${list.map((t) => t.openedAt)}::timestamptz[],
                  ${list.map((t) => t.openUntil)}::timestamptz[], ${list.map((t) => t.failures)}::int[])
           AS u(host, opened, opened_at, open_until, failures)
      CROSS JOIN LATERAL (SELECT CASE WHEN u.opened THEN 'host.circuit_opened' ELSE 'host.circuit_closed' END AS type, u.*) x
      JOIN operator_endpoint oe ON true JOIN api_key k ON k.id = oe.api_key_id
      WHERE k.is_admin AND k.revoked_at IS NULL`,
    d,
    storedEvents,
  );

/** Recoveries the leader's sweep stamps at most per statement. */
const RECOVERIES_PER_SWEEP = 100;

/**
 * recovery.completed, run by the maintenance leader: recoveries done or cancelled
 * (their task finished) whose requeued callbacks have all settled
 * (callback_recovery_idx: one probe per recovery, ordered by status so that no scan
 * of the table looks cheaper: openBatchesWithNothingLeft), not yet stamped. The statement
 * stamps `notified_at` and stores the event together, and takes the recovery rows
 * `FOR UPDATE SKIP LOCKED`, so a cause is reported once even by two leaders (there is
 * one at a time; the stamp is what makes it so anyway). Recoveries of keys without an
 * endpoint are stamped too, so the sweep's walk (recovery_unnotified_idx) stays short.
 */
export const settledRecoveries = (d: OperatorEventDefaults) =>
  withOperatorEvents(
    Prisma.sql`
      due AS MATERIALIZED (
        SELECT r.id FROM recovery r JOIN task t ON t.id = r.id
        WHERE r.notified_at IS NULL AND t.status IN ('finished', 'cancelled')
          AND (SELECT true FROM callback c WHERE c.recovery_id = r.id AND c.status ${UNFINISHED_RANGE} ORDER BY c.status LIMIT 1) IS NULL
        ORDER BY r.id LIMIT ${RECOVERIES_PER_SWEEP}
        FOR UPDATE OF r SKIP LOCKED
      ), stamped AS (
        UPDATE recovery r SET notified_at = now() FROM due WHERE r.id = due.id
        RETURNING r.id, r.api_key_id, r.matched
      ),`,
    Prisma.sql`
      SELECT s.api_key_id, 'recovery.completed' AS type, 'recovery.completed:' || s.id::text AS event_id,
             jsonb_build_object('recoveryId', s.id, 'state', CASE t.status WHEN 'cancelled' THEN 'cancelled' ELSE 'done' END,
                                'matched', s.matched, 'requeued', t.done, 'delivered', n.delivered, 'failed', n.failed,
                                'cancelled', n.cancelled, 'finishedAt', ${iso(Prisma.sql`t.finished_at`)}) AS payload,
             ${NO_NOTIFY}
      FROM stamped s JOIN task t ON t.id = s.id
      CROSS JOIN LATERAL (
        SELECT count(*) FILTER (WHERE c.status = ${STATUS.succeeded})::int AS delivered,
               count(*) FILTER (WHERE c.status = ${STATUS.failed})::int AS failed,
               count(*) FILTER (WHERE c.status = ${STATUS.cancelled})::int AS cancelled
        FROM callback c WHERE c.recovery_id = s.id) n
      WHERE ${hasEndpoint(Prisma.sql`s.api_key_id`)}`,
    d,
    Prisma.sql`SELECT (SELECT count(*)::int FROM stamped) AS stamped, (SELECT count(*)::int FROM e) AS events`,
  );
