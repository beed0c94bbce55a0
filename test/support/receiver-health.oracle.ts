import type { RecordedOutcome } from '../../src/dispatch/outcome.types.js';
import { SUCCESS_WRITE_MS } from '../../src/dispatch/sql/outcome.sql.js';

/**
 * Receiver health merged as the write-back's statement merges it (healthMerge in
 * src/dispatch/sql/outcome.sql.ts), written out in plain code: the test oracle that
 * test/db/receiver-health.test.ts compares the statement with on random stored states.
 */

/** One receiver's health: what a write-back's attempts say of it (receiverHealth), or its row's columns, or what is written (mergeHealth). */
export interface ReceiverHealth {
  receiverId: string;
  /** The latest successful attempt; null when none succeeded. */
  lastSuccessAt: Date | null;
  /** The first and the last failure after it (after nothing, when none succeeded); null when none failed after it. */
  failingSince: Date | null;
  lastFailureAt: Date | null;
}

/**
 * Per receiver, what one write-back's attempts (those that landed) say of its
 * health: its latest success here, and the first and last failure after it (every
 * failure when none succeeded). None for attempts without a receiver, so a
 * write-back of callbacks without receivers runs no statement more.
 */
export function receiverHealth(rows: readonly RecordedOutcome[], landed: ReadonlySet<string>): ReceiverHealth[] {
  const byReceiver = new Map<string, RecordedOutcome[]>();
  for (const r of rows) {
    // no attempt (a transform's cancel): it says nothing of the receiver
    if (!r.receiverId || r.outcome === null || !landed.has(r.callbackId)) continue;
    const list = byReceiver.get(r.receiverId);
    if (list) list.push(r);
    else byReceiver.set(r.receiverId, [r]);
  }
  return [...byReceiver].map(([receiverId, attempts]) => {
    attempts.sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime());
    const lastSuccess = attempts.findLastIndex((a) => a.outcome === 'success');
    const failures = attempts.slice(lastSuccess + 1);
    return {
      receiverId,
      lastSuccessAt: attempts[lastSuccess]?.startedAt ?? null,
      failingSince: failures[0]?.startedAt ?? null,
      lastFailureAt: failures.at(-1)?.startedAt ?? null,
    };
  });
}

/** A receiver's health to write, and whether its failure record begins with it (its receiver.failing operator event). */
export interface HealthChange extends ReceiverHealth {
  startedFailing: boolean;
}

const ms = (d: Date | null) => d?.getTime() ?? null;
const latest = (a: Date | null, b: Date | null) => (a === null ? b : b === null ? a : a >= b ? a : b);

/**
 * Merges what a write-back's attempts say of each receiver (`here`, receiverHealth) into
 * its row as locked (`stored`, lockReceivers), and answers the rows that change.
 * Write-backs land in any order (several workers, each buffering), so the row is merged
 * by time, not by arrival: the latest success of the row and of these attempts wins, and
 * `failingSince` is the earliest failure known after it (the row's first or last, these
 * attempts' first or last). A failure older than a recorded success starts nothing, and a
 * success older than recorded failures clears nothing. A healthy receiver's
 * `lastSuccessAt` moves only once it is SUCCESS_WRITE_MS behind (a row write per
 * SUCCESS_WRITE_MS, not per write-back); a failure less than that older than a success
 * not written still counts, as a receiver failing for real keeps failing.
 */
export function mergeHealth(stored: readonly ReceiverHealth[], here: readonly ReceiverHealth[]): HealthChange[] {
  const rows = new Map(stored.map((r) => [r.receiverId, r]));
  const changes: HealthChange[] = [];
  for (const h of here) {
    const r = rows.get(h.receiverId);
    if (!r) continue; // gone meanwhile: nothing to write
    const success = latest(r.lastSuccessAt, h.lastSuccessAt);
    const lastFailure = latest(r.lastFailureAt, h.lastFailureAt);
    let failing: Date | null = null;
    // the row's last failure too: a success that lands late, between the row's first and last failure, leaves it failing since that one
    for (const t of [r.failingSince, r.lastFailureAt, h.failingSince, h.lastFailureAt]) {
      if (t !== null && (success === null || t > success) && (failing === null || t < failing)) failing = t;
    }
    const throttled = failing === null && r.lastSuccessAt !== null && success !== null && ms(r.lastSuccessAt)! > ms(success)! - SUCCESS_WRITE_MS;
    const changed = ms(failing) !== ms(r.failingSince) || ms(lastFailure) !== ms(r.lastFailureAt) || (ms(success) !== ms(r.lastSuccessAt) && !throttled);
    if (!changed) continue;
    changes.push({
      receiverId: h.receiverId,
      lastSuccessAt: throttled ? r.lastSuccessAt : success,
      failingSince: failing,
      lastFailureAt: lastFailure,
      startedFailing: r.failingSince === null && failing !== null,
    });
  }
  return changes;
}
