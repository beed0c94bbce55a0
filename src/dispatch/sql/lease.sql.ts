import { STATUS } from '../../common/states.js';
import { Prisma } from '../../generated/prisma/client.js';
import { dueAt } from '../../receivers/receiver-hold.sql.js';

/**
 * Makes rows of crashed workers claimable again: in-flight rows whose lease ran out
 * go back to pending, due now. Served by `callback_lease_idx` (rows holding a
 * lease); locks the rows it updates. The call that was in flight at the crash may
 * have reached the receiver; it is sent again with the same webhook-id
 * (at-least-once); a held one (its receiver disabled meanwhile) is due HELD_SHIFT
 * later. Run by the maintenance leader.
 */
export const reapExpiredLeases = (now: Prisma.Sql) => Prisma.sql`
  UPDATE callback SET status = ${STATUS.pending}, lease_owner = NULL, lease_expires_at = NULL,
                      next_attempt_at = ${dueAt(now, Prisma.sql`held`)}
  WHERE lease_expires_at < ${now}`;

/** When the next pending callback falls due, to sleep exactly until then. One probe of `callback_due_idx`; no locks. */
export const nextDueAt = () => Prisma.sql`
  SELECT min(next_attempt_at) AS at FROM callback WHERE status = ${STATUS.pending}`;
