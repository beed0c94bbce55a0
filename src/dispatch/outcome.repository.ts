import { Injectable } from '@nestjs/common';
import { completeBatches } from '../batches/batch-completion.sql.js';
import type { CallbackStatus, Outcome } from '../common/states.js';
import { DispatchDatabase } from '../database/dispatch-database.js';
import { recordOutcomes, recordReceiverHealth, releaseClaims, type ReceiverHealth } from './sql/outcome.sql.js';

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

  /** Writes outcomes of rows still leased to `owner`; returns the callback ids that landed. */
  async recordOutcomes(owner: string, rows: RecordedOutcome[]): Promise<string[]> {
    const landed = await this.db.query<{ id: string }>(recordOutcomes(owner, rows));
    const ids = landed.map((r) => r.id);
    const health = receiverHealth(rows, new Set(ids));
    if (health.length > 0) await this.db.execute(recordReceiverHealth(health));
    return ids;
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

/** Per receiver, what the attempts that landed say of its health (none: no attempt of a receiver). */
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
      succeededLast: failures.length === 0,
      hadSuccess: lastSuccess >= 0,
      failingSince: failures[0]?.startedAt ?? null,
      lastFailureAt: attempts.findLast((a) => a.outcome !== 'success')?.startedAt ?? null,
    };
  });
}
