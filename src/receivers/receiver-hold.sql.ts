import { UNFINISHED } from '../common/states.js';
import { Prisma } from '../generated/prisma/client.js';

/**
 * Holds (or releases) the unfinished callbacks of receivers: the claim passes over
 * held rows (`NOT c.held`), so they stay pending, unsent, with no attempt used. Run in
 * the transaction that flips the receivers' `disabled`, after locking their rows
 * (the ingest reads them `FOR SHARE`, so a batch committed meanwhile is stored held or
 * not as its receiver is). Reads and locks the rows through `callback_receiver_idx`;
 * rows already as wanted are not written. Used by the API (PUT) and the maintenance
 * leader (auto-disable).
 */
export const holdReceiverCallbacks = (receiverIds: string[], held: boolean) => Prisma.sql`
  UPDATE callback SET held = ${held}
  WHERE receiver_id = ANY(${receiverIds}::uuid[]) AND status IN ${UNFINISHED} AND held <> ${held}`;

/** The columns a disable or enable sets (enabling also forgets the failure record). */
export const disabledColumns = (disabled: boolean, reason: string) => (disabled
  ? Prisma.sql`disabled = true, disabled_reason = ${reason}, disabled_at = now(),`
  : Prisma.sql`disabled = false, disabled_reason = NULL, disabled_at = NULL, failing_since = NULL, last_failure_at = NULL,`);
