import { Prisma } from '../generated/prisma/client.js';

/**
 * How far a held callback's `next_attempt_at` is moved out, and moved back exactly
 * when it is released. Held rows then lie past every due time: the claim's walks
 * over due rows (`next_attempt_at <= now`, oldest first) and the next-due timer never
 * read them, so a disabled receiver's backlog costs other callbacks nothing (with a
 * filter alone, a claim read every held row older than the rows it took). Wherever a
 * pending row's `next_attempt_at` is set (ingest, write-back, lease reaper, retry),
 * a held row gets it plus this. A disable or enable moves a receiver's rows in
 * chunks (its task: reconcileHeldChunk in src/receivers/receiver-tasks.sql.ts); the ingest reads
 * the receiver's row `FOR SHARE`, so a batch is stored held or not as its receiver
 * is when it commits.
 */
export const HELD_SHIFT = Prisma.raw(`interval '1000 years'`);

/** `next_attempt_at` for a row due at `at`, held or not (`held`: an SQL boolean). */
export const dueAt = (at: Prisma.Sql, held: Prisma.Sql) => Prisma.sql`(${at} + CASE WHEN ${held} THEN ${HELD_SHIFT} ELSE interval '0' END)`;

/**
 * Whether the receiver of the `callback` row at hand is disabled (an SQL boolean): a
 * retried row is held then. Read `FOR SHARE`, as the ingest reads it, so it is the
 * receiver as it is when the retry commits: a disable or enable under way (its row
 * locked `FOR UPDATE`) is waited for and its latest version read, and one that comes
 * after waits for the retry and its task then sees the retried rows. Read with the
 * statement's snapshot instead, a retry racing an enable held its rows after the
 * enable's task had passed them: held for good under an enabled receiver.
 */
export const receiverDisabled = Prisma.sql`(callback.receiver_id IS NOT NULL AND COALESCE((SELECT r.disabled FROM receiver r WHERE r.id = callback.receiver_id FOR SHARE), false))`;

/** The columns a disable or enable sets (enabling also forgets the failure record). */
export const disabledColumns = (disabled: boolean, reason: string) =>
  disabled
    ? Prisma.sql`disabled = true, disabled_reason = ${reason}, disabled_at = now(),`
    : Prisma.sql`disabled = false, disabled_reason = NULL, disabled_at = NULL, failing_since = NULL, last_failure_at = NULL,`;
