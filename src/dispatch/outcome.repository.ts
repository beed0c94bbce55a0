import { Injectable } from '@nestjs/common';
import { completeBatches } from '../batches/batch-completion.sql.js';
import type { CallbackStatus, Outcome } from '../common/states.js';
import { DispatchDatabase } from '../database/dispatch-database.js';
import { receiverHealth } from './receiver-health.policy.js';
import { lockReceivers, recordOutcomes, recordReceiverHealth, releaseClaims } from './sql/outcome.sql.js';

/** One finished attempt and the callback state it leads to. */
export interface RecordedOutcome {
  callbackId: string;
  apiKeyId: string;
  host: string;
  number: number;
  status: CallbackStatus;
  nextAttemptAt: Date | null;
  completedAt: Date | null;
  startedAt: Date;
  durationMs: number;
  dnsMs: number | null;
  connectMs: number | null;
  tlsMs: number | null;
  tunnelMs: number | null;
  firstByteMs: number | null;
  statusCode: number | null;
  outcome: Outcome;
  error: string | null;
  responseHeaders: Record<string, string> | null;
  responseBody: string | null;
  receiverId: string | null;
}

/** The completer's statements (sql/outcome.sql.ts, batch-completion.sql.ts) on the dispatch pool. */
@Injectable()
export class OutcomeRepository {
  constructor(private readonly db: DispatchDatabase) {}

  /**
   * Writes outcomes of rows still leased to `owner`, and what they say of their
   * receivers' health, in one transaction: both or neither. Returns the callback ids
   * that landed. Rows without a receiver: one statement, no receiver row touched.
   */
  async recordOutcomes(owner: string, rows: RecordedOutcome[]): Promise<string[]> {
    const receivers = [...new Set(rows.flatMap((r) => (r.receiverId ? [r.receiverId] : [])))];
    if (receivers.length === 0) return (await this.db.query<{ id: string }>(recordOutcomes(owner, rows))).map((r) => r.id);
    return this.db.transaction(async (tx) => {
      await tx.query(lockReceivers(receivers));
      const ids = (await tx.query<{ id: string }>(recordOutcomes(owner, rows))).map((r) => r.id);
      const health = receiverHealth(rows, new Set(ids));
      if (health.length > 0) await tx.execute(recordReceiverHealth(health));
      return ids;
    });
  }

  /** Hands rows still leased to `owner` back untouched; returns how many moved. */
  releaseClaims(owner: string, ids: string[]): Promise<number> {
    if (ids.length === 0) return Promise.resolve(0);
    return this.db.execute(releaseClaims(owner, ids));
  }

  /** Stamps those of the batches that have nothing left to send; returns them. */
  completeBatches(batchIds: string[]): Promise<Array<{ id: string; completedAt: Date }>> {
    if (batchIds.length === 0) return Promise.resolve([]);
    return this.db.query(completeBatches(batchIds));
  }
}
