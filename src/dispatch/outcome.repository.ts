import { Injectable } from '@nestjs/common';
import { completeBatches } from '../queue/batch-completion.sql.js';
import { AppConfig } from '../config/app.config.js';
import { DispatchDatabase } from '../database/dispatch-database.js';
import { exhaustedCallbacks, failingReceivers } from '../queue/operator-causes.sql.js';
import { operatorEventDefaults, type OperatorEventDefaults } from '../queue/operator-event.sql.js';
import { mergeHealth, receiverHealth, SUCCESS_WRITE_MS } from './receiver-health.policy.js';
import { failGoneEndpoints } from './sql/gone.sql.js';
import { lockReceivers, recordOutcomes, recordSuccesses, releaseClaims, writeReceiverHealth } from './sql/outcome.sql.js';
import type { ReceiverHealth, RecordedOutcome } from './outcome.types.js';

/** The completer's statements (sql/outcome.sql.ts, batch-completion.sql.ts) on the dispatch pool. */
@Injectable()
export class OutcomeRepository {
  private readonly defaults: OperatorEventDefaults;

  constructor(
    private readonly db: DispatchDatabase,
    config: AppConfig,
  ) {
    this.defaults = operatorEventDefaults(config);
  }

  /**
   * Writes outcomes of rows still leased to `owner`, and what they say of their
   * receivers' health, in one transaction: both or neither. Returns the callback ids
   * that landed. Rows without a receiver, none failed for good: one statement, no
   * receiver row touched. Rows with receivers, every attempt a success (the drain of
   * a healthy fan-out): one statement too, with their receivers' health merged in SQL
   * (recordSuccesses). The operator events these outcomes cause (callback.exhausted
   * of the rows failed for good that landed, receiver.failing of the receivers whose
   * failure record they start) are stored in the same transaction, so once per cause;
   * a statement for them runs only when such a row or receiver is there (rare), never
   * per callback, and stores nothing for a key without an operator endpoint.
   */
  async recordOutcomes(owner: string, rows: RecordedOutcome[]): Promise<string[]> {
    const latest = latestByReceiver(rows);
    const receivers = [...latest.keys()];
    const anyExhausted = rows.some((r) => r.status === 'failed');
    if (receivers.length === 0 && !anyExhausted) return (await this.db.query<{ id: string }>(recordOutcomes(owner, rows))).map((r) => r.id);
    // One statement instead of a transaction of four or five round trips, which cost
    // worker CPU on every delivery (bench/README.md, bench:fanout).
    if (rows.every((r) => r.outcome === 'success')) {
      return (await this.db.query<{ id: string }>(recordSuccesses(owner, rows, latest, SUCCESS_WRITE_MS))).map((r) => r.id);
    }
    return this.db.transaction(async (tx) => {
      const stored = receivers.length > 0 ? await tx.query<ReceiverHealth>(lockReceivers(receivers)) : [];
      const ids = (await tx.query<{ id: string }>(recordOutcomes(owner, rows))).map((r) => r.id);
      const landed = new Set(ids);
      const changes = mergeHealth(stored, receiverHealth(rows, landed));
      if (changes.length > 0) await tx.execute(writeReceiverHealth(changes));
      const exhausted = rows.filter((r) => r.status === 'failed' && landed.has(r.callbackId)).map((r) => r.callbackId);
      if (exhausted.length > 0) await tx.query(exhaustedCallbacks(exhausted, this.defaults));
      const started = changes.filter((r) => r.startedFailing).map((r) => r.receiverId);
      if (started.length > 0) await tx.query(failingReceivers(started, this.defaults));
      return ids;
    });
  }

  /** Fails for good the pending rows of `ids` whose URL answered 410 Gone, with their callback.exhausted events (failGoneEndpoints); returns their batches. */
  async failGoneEndpoints(ids: string[]): Promise<string[]> {
    const rows = await this.db.query<{ id: string; batchId: string }>(failGoneEndpoints(ids, this.defaults));
    return [...new Set(rows.map((r) => r.batchId))];
  }

  /** Hands rows still leased to `owner` back untouched; returns how many moved. */
  releaseClaims(owner: string, ids: string[]): Promise<number> {
    if (ids.length === 0) return Promise.resolve(0);
    return this.db.execute(releaseClaims(owner, ids));
  }

  /** Stamps those of the batches that have nothing left to send; returns them. */
  completeBatches(batchIds: string[]): Promise<Array<{ id: string; completedAt: Date }>> {
    if (batchIds.length === 0) return Promise.resolve([]);
    return this.db.query(completeBatches(batchIds, this.defaults));
  }
}

/** Each receiver of `rows` with the start of its latest attempt among them (of a write-back of successes: its latest success). */
function latestByReceiver(rows: RecordedOutcome[]): Map<string, Date> {
  const latest = new Map<string, Date>();
  for (const r of rows) {
    if (!r.receiverId || r.outcome === null) continue;
    const seen = latest.get(r.receiverId);
    if (!seen || r.startedAt > seen) latest.set(r.receiverId, r.startedAt);
  }
  return latest;
}
