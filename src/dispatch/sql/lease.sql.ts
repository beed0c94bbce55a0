import { STATUS } from '../../common/states.js';
import { Prisma } from '../../generated/prisma/client.js';
import { dueAt } from '../../receivers/receiver-hold.sql.js';

/** `last_error` of a callback whose worker stopped while it held it (the attempt counted, its outcome unknown). */
export const WORKER_LOST = 'worker_lost: the worker sending this callback stopped during the attempt (its lease ran out)';

/**
 * Rows of crashed workers: in-flight rows whose lease ran out. The attempt counts
 * (as River and graphile-worker count one when a job is fetched): a callback whose
 * call kills its worker every time would otherwise be sent forever. So each such row
 * goes back to pending, due now, or, when that was its last attempt, fails for good
 * (`last_error` WORKER_LOST). No attempt row is written: nothing is known of the call
 * but that it started; the gap in the attempt numbers and `last_error` say so. The
 * call may have reached the receiver; a row sent again keeps its webhook-id
 * (at-least-once); a held one (its receiver disabled meanwhile) is due HELD_SHIFT
 * later. Served by `callback_lease_idx` (rows holding a lease); locks the rows it
 * updates, and a row whose write-back committed meanwhile no longer matches when its
 * lock is granted (Read Committed reads the row again). Run by the maintenance
 * leader. Returns the ids and whether each failed.
 */
export const reapExpiredLeases = (now: Prisma.Sql) => {
  const exhausted = Prisma.sql`attempts + 1 >= max_attempts`;
  return Prisma.sql`
    UPDATE callback
    SET attempts = attempts + 1,
        status = CASE WHEN ${exhausted} THEN ${STATUS.failed} ELSE ${STATUS.pending} END,
        completed_at = CASE WHEN ${exhausted} THEN ${now} ELSE NULL END,
        last_status_code = NULL, last_error = ${WORKER_LOST},
        lease_owner = NULL, lease_expires_at = NULL,
        next_attempt_at = CASE WHEN ${exhausted} THEN next_attempt_at ELSE ${dueAt(now, Prisma.sql`held`)} END
    WHERE lease_expires_at < ${now}
    RETURNING id, status = ${STATUS.failed} AS failed`;
};

/**
 * When the next pending callback falls due, to sleep exactly until then: the first
 * entry of `callback_due_idx`; no locks. Written as ORDER BY … LIMIT 1, not min():
 * with the queue's statistics stale ("nothing is pending", as ANALYZE saw a table of
 * finished rows), Postgres 15 planned min() as an aggregate over every pending row
 * (40 ms for 100,000) rather than its one-probe rewrite; the LIMIT inside the index
 * walk leaves it no plan but the walk (test/plans.test.ts). No row: `at` is absent.
 */
export const nextDueAt = () => Prisma.sql`
  SELECT next_attempt_at AS at FROM callback WHERE status = ${STATUS.pending} ORDER BY next_attempt_at LIMIT 1`;
