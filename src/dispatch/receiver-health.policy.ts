import type { RecordedOutcome } from './outcome.repository.js';
import type { ReceiverHealth } from './sql/outcome.sql.js';

/**
 * Per receiver, what one write-back's attempts (those that landed) say of its
 * health: its latest success here, and the first and last failure after it (every
 * failure when none succeeded). None for attempts without a receiver, so a
 * write-back of callbacks without receivers runs no statement more.
 */
export function receiverHealth(rows: readonly RecordedOutcome[], landed: ReadonlySet<string>): ReceiverHealth[] {
  const byReceiver = new Map<string, RecordedOutcome[]>();
  for (const r of rows) {
    if (!r.receiverId || !landed.has(r.callbackId)) continue;
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
