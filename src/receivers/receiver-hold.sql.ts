import { UNFINISHED } from '../common/states.js';
import { Prisma } from '../generated/prisma/client.js';

/**
 * How far a held callback's `next_attempt_at` is moved out, and moved back exactly
 * when it is released. Held rows then lie past every due time: the claim's walks
 * over due rows (`next_attempt_at <= now`, oldest first) and the next-due timer never
 * read them, so a disabled receiver's backlog costs other callbacks nothing (with a
 * filter alone, a claim read every held row older than the rows it took). Wherever a
 * pending row's `next_attempt_at` is set (ingest, write-back, lease reaper, retry),
 * a held row gets it plus this.
 */
export const HELD_SHIFT = Prisma.raw(`interval '1000 years'`);

/** `next_attempt_at` for a row due at `at`, held or not (`held`: an SQL boolean). */
export const dueAt = (at: Prisma.Sql, held: Prisma.Sql) => Prisma.sql`(${at} + CASE WHEN ${held} THEN ${HELD_SHIFT} ELSE interval '0' END)`;

/**
 * Holds (or releases) the unfinished callbacks of receivers: they stay pending,
 * unsent, with no attempt used, their due time moved out by HELD_SHIFT (and back);
 * the claim also passes over held rows (`NOT c.held`). Run in
 * the transaction that flips the receivers' `disabled`, after locking their rows
 * (the ingest reads them `FOR SHARE`, so a batch committed meanwhile is stored held or
 * not as its receiver is). Reads and locks the rows through `callback_receiver_idx`;
 * rows already as wanted are not written. Used by the API (PUT) and the maintenance
 * leader (auto-disable).
 */
export const holdReceiverCallbacks = (receiverIds: string[], held: boolean) => Prisma.sql`
  UPDATE callback SET held = ${held}, next_attempt_at = next_attempt_at ${Prisma.raw(held ? '+' : '-')} ${HELD_SHIFT}
  WHERE receiver_id = ANY(${receiverIds}::uuid[]) AND status IN ${UNFINISHED} AND held <> ${held}`;

/** The columns a disable or enable sets (enabling also forgets the failure record). */
export const disabledColumns = (disabled: boolean, reason: string) =>
  disabled
    ? Prisma.sql`disabled = true, disabled_reason = ${reason}, disabled_at = now(),`
    : Prisma.sql`disabled = false, disabled_reason = NULL, disabled_at = NULL, failing_since = NULL, last_failure_at = NULL,`;
