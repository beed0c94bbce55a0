import { STATUS } from '../../model/states.js';
import { QUEUE } from '../../queue/queue.sql.js';
import { Prisma } from '../../generated/prisma/client.js';
import { dueAt } from '../../queue/receiver-hold.sql.js';
import { exhaustedSource } from '../../queue/operator-causes.sql.js';
import { withOperatorEvents, type OperatorEventDefaults } from '../../queue/operator-event.sql.js';

/** `last_error` of a callback whose worker stopped while it held it (the attempt counted, its outcome unknown). */
export const WORKER_LOST = 'worker_lost: the worker sending this callback stopped during the attempt (its lease ran out)';

/**
 * Rows of crashed workers: in-flight rows whose lease ran out. The attempt counts, or a
 * callback whose call kills its worker every time would be sent forever: each row goes
 * back to pending, due now, or, after its last attempt, fails for good (`last_error`
 * WORKER_LOST, with its callback.exhausted operator event). No attempt row is written, as
 * nothing is known of the call but that it started. A row sent again keeps its webhook-id
 * (at-least-once); a held one is due HELD_SHIFT later. Served by `callback_lease_idx`, at
 * most `limit` rows a statement, oldest leases first (the leader runs it again while it
 * fills one, so a crashed worker's rows never sit under one statement's locks). Locks the
 * rows it updates; one whose write-back committed meanwhile no longer matches once its
 * lock is granted (Read Committed). Returns the ids and whether each failed.
 */
export const reapExpiredLeases = (now: Prisma.Sql, limit: number, d: OperatorEventDefaults) => {
  const exhausted = Prisma.sql`c.attempts + 1 >= c.max_attempts`;
  // callback.exhausted of the rows failed here, in this statement: once, with the row's change
  return withOperatorEvents(
    Prisma.sql`
      x AS MATERIALIZED (
        SELECT id FROM ${QUEUE} WHERE status = ${STATUS.in_flight} AND lease_expires_at < ${now}
        ORDER BY lease_expires_at LIMIT ${limit}
        FOR UPDATE
      ), reaped AS (
        UPDATE callback c
        SET attempts = c.attempts + 1,
            status = CASE WHEN ${exhausted} THEN ${STATUS.failed} ELSE ${STATUS.pending} END,
            completed_at = CASE WHEN ${exhausted} THEN ${now} ELSE NULL END,
            done_at = CASE WHEN ${exhausted} THEN ${now} ELSE 'infinity' END,
            last_status_code = NULL, last_error = ${WORKER_LOST},
            lease_owner = NULL, lease_expires_at = NULL,
            next_attempt_at = CASE WHEN ${exhausted} THEN c.next_attempt_at ELSE ${dueAt(now, Prisma.sql`c.held`)} END
        FROM x WHERE c.id = x.id AND c.done_at = 'infinity'
        RETURNING c.id, c.api_key_id, c.batch_id, c.external_id, c.url, c.receiver_id, c.attempts, c.last_status_code, c.last_error,
                  c.completed_at, c.status
      ),`,
    exhaustedSource(Prisma.sql`reaped`, Prisma.sql`true`),
    d,
    Prisma.sql`SELECT id, status = ${STATUS.failed} AS failed FROM reaped`,
  );
};

/**
 * When the next pending callback falls due, to sleep exactly until then: the first
 * entry of `callback_due_idx`; no locks. Written as ORDER BY … LIMIT 1, not min():
 * with the queue's statistics stale ("nothing is pending", as ANALYZE saw a table of
 * finished rows), Postgres 15 planned min() as an aggregate over every pending row
 * (40 ms for 100,000) rather than its one-probe rewrite; the LIMIT inside the index
 * walk leaves it no plan but the walk (test/db/plans.test.ts). No row: `at` is absent.
 */
export const nextDueAt = () => Prisma.sql`
  SELECT next_attempt_at AS at FROM ${QUEUE} WHERE status = ${STATUS.pending} ORDER BY next_attempt_at LIMIT 1`;
