import { Injectable } from '@nestjs/common';
import { completeBatches } from '../queue/batch-completion.sql.js';
import { AppConfig } from '../config/app.config.js';
import { DispatchDatabase } from '../database/dispatch-database.js';
import { operatorEventDefaults, type OperatorEventDefaults } from '../queue/operator-event.sql.js';
import { failGoneEndpoints } from './sql/gone.sql.js';
import { recordOutcomes, recordSuccesses, recordWithHealth, releaseClaims } from './sql/outcome.sql.js';
import type { RecordedOutcome } from './outcome.types.js';

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
   * Writes outcomes of rows still leased to `owner`, with what they say of their
   * receivers' health and the operator events they cause, in one statement: all or
   * nothing. Returns the callback ids that landed. Rows without a receiver, none failed
   * for good: the outcomes alone (recordOutcomes). Rows with receivers, every attempt a
   * success (the drain of a healthy fan-out): recordSuccesses, which locks only the
   * receivers it may change. Any other: recordWithHealth.
   */
  async recordOutcomes(owner: string, rows: RecordedOutcome[]): Promise<string[]> {
    const latest = latestByReceiver(rows);
    const anyExhausted = rows.some((r) => r.status === 'failed');
    const statement =
      latest.size === 0 && !anyExhausted
        ? recordOutcomes(owner, rows)
        : rows.every((r) => r.outcome === 'success')
          ? recordSuccesses(owner, rows, latest)
          : recordWithHealth(owner, rows, [...latest.keys()], this.defaults);
    return (await this.db.query<{ id: string }>(statement)).map((r) => r.id);
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
