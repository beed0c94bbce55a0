import { Injectable, Logger } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { CaughtErrors } from '../logging/caught-errors.js';
import { uuidv7 } from '../common/uuid.js';
import { AppConfig } from '../config/app.config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { traceWriteBack } from './dispatch.tracing.js';
import { WorkerStatus } from '../worker-status/worker-status.service.js';
import type { ClaimedCallback } from './claim.repository.js';
import { OutcomeRepository } from './outcome.repository.js';
import type { RecordedOutcome } from './outcome.types.js';

type Outcome = RecordedOutcome & { batchId: string };

/** The log line of a completed batch (the completer's and the maintenance sweep's). */
export function logBatchesCompleted(logger: Logger, batches: Array<{ id: string; completedAt: Date }>): void {
  for (const b of batches) {
    logger.log({ msg: `batch ${b.id} completed`, event: 'batch_completed', batchId: b.id, completedAt: b.completedAt.toISOString() });
  }
}

/**
 * Step 3, and the one place where a claimed row leaves the worker: with an outcome
 * (`add`, written back in batches) or handed back untouched (`release`: stale
 * waits, shutdown). Outcomes are written every WRITEBACK_INTERVAL_MS, or at once
 * when WRITEBACK_MAX_ROWS are waiting, one write at a time. A failed write (database
 * away) keeps its rows and tries again; nothing is dropped here. Rows whose lease
 * was lost meanwhile are refused by the statement (sql/outcome.sql.ts), not here.
 * After a write it stamps the batches that finished (batch-completion.sql.ts).
 */
@Injectable()
export class CompleterService {
  private readonly logger = new Logger(CompleterService.name);
  private buffer: Outcome[] = [];
  /** Outcomes not yet written back, per host: their rows still hold a slot of the host's cap. */
  private readonly unwritten = new Map<string, number>();
  private writing?: Promise<void>;
  /** Batch completion stamps, one after the other, off the write-back's path. */
  private completing: Promise<void> = Promise.resolve();
  private timer?: NodeJS.Timeout;
  private soon?: NodeJS.Immediate;
  private failures = 0;
  private readonly writtenListeners: Array<() => void> = [];
  private readonly retryListeners: Array<(at: Date) => void> = [];

  constructor(
    private readonly config: AppConfig,
    private readonly repo: OutcomeRepository,
    private readonly metrics: MetricsService,
    private readonly status: WorkerStatus,
    private readonly caught: CaughtErrors,
  ) {}

  /** `listener` runs after each write-back landed (hosts' in-flight counts went down). */
  onWritten(listener: () => void): void {
    this.writtenListeners.push(listener);
  }

  /** `listener` is told the earliest retry each write-back scheduled, so the worker can wake for it. */
  onRetryScheduled(listener: (at: Date) => void): void {
    this.retryListeners.push(listener);
  }

  /** Runs the write-back and release statements once on no rows, so the first real ones are not cold. */
  async warmUp(): Promise<void> {
    await this.repo.recordOutcomes(this.status.owner, []);
    await this.repo.completeBatches([uuidv7()]); // an id no batch has
  }

  get pending(): number {
    return this.buffer.length;
  }

  /** Outcomes of `host` buffered or being written. */
  pendingFor(host: string): number {
    return this.unwritten.get(host) ?? 0;
  }

  add(outcome: Outcome): void {
    this.buffer.push(outcome);
    this.unwritten.set(outcome.host, this.pendingFor(outcome.host) + 1);
    if (this.buffer.length >= this.config.writebackMaxRows) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.config.writebackIntervalMs);
  }

  /** Hands rows back untouched: pending again, as they were. A failure leaves them to their leases. */
  async release(rows: ClaimedCallback[]): Promise<void> {
    if (rows.length === 0) return;
    try {
      await this.repo.releaseClaims(
        this.status.owner,
        rows.map((r) => r.id),
      );
    } catch (error) {
      this.caught.count('release_claims');
      this.logger.warn(`could not hand back ${rows.length} claimed callbacks (their leases will expire): ${(error as Error).message}`);
    }
  }

  /**
   * Writes soon: once the calls finishing in this turn of the event loop are
   * buffered too, and after the write under way, so they go back in one statement.
   */
  flushSoon(): void {
    this.soon ??= setImmediate(() => {
      this.soon = undefined;
      void this.flush();
    });
  }

  /** Writes everything buffered so far; resolves when it is written (or failed once). */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.writing) await this.writing;
    if (this.buffer.length === 0) return;
    const rows = this.buffer.splice(0, this.buffer.length);
    this.writing = this.write(rows);
    try {
      await this.writing;
    } finally {
      this.writing = undefined;
    }
  }

  /** Flushes until empty or `deadline` (ms since epoch) passes, then waits for the batch stamps. */
  async drain(deadline: number): Promise<void> {
    while (this.buffer.length > 0 && Date.now() < deadline) {
      await this.flush();
      if (this.buffer.length > 0) await new Promise((r) => setTimeout(r, 200));
    }
    await this.completing;
  }

  private async write(rows: Outcome[]): Promise<void> {
    try {
      const started = performance.now();
      await traceWriteBack(rows, () => this.repo.recordOutcomes(this.status.owner, rows));
      this.metrics.writeBackDone(rows.length, performance.now() - started);
      this.failures = 0;
      for (const r of rows) {
        const n = this.pendingFor(r.host) - 1;
        if (n > 0) this.unwritten.set(r.host, n);
        else this.unwritten.delete(r.host);
      }
      const retryAt = Math.min(...rows.map((r) => r.nextAttemptAt?.getTime() ?? Infinity));
      if (retryAt !== Infinity) this.retryListeners.forEach((l) => l(new Date(retryAt)));
      this.writtenListeners.forEach((l) => l());
    } catch (error) {
      this.buffer.unshift(...rows);
      this.caught.count('write_back');
      if (this.failures++ % 50 === 0) this.logger.warn(`write-back of ${rows.length} outcomes failed, will retry: ${(error as Error).message}`);
      this.timer ??= setTimeout(() => void this.flush(), Math.min(100 * this.failures, 2000));
      return;
    }
    this.stampBatches([...new Set(rows.filter((r) => r.completedAt).map((r) => r.batchId))]);
  }

  /**
   * Fails, without a call, the due rows a claim met whose URL answered 410 Gone
   * (OutcomeRepository.failGoneEndpoints: with their callback.exhausted events), then
   * stamps their batches as a write-back's. A failure leaves them pending: the next
   * claim meets them again.
   */
  async failGone(ids: string[]): Promise<void> {
    try {
      this.stampBatches(await this.repo.failGoneEndpoints(ids));
    } catch (error) {
      this.caught.record('fail_gone', error, 'the rows stay pending; the next claim meets them again');
    }
  }

  /** Stamps the batches that finished, off the caller's path, one stamp after the other. */
  private stampBatches(finished: string[]): void {
    if (finished.length === 0) return;
    // Not awaited by the write: the next write-back (which frees hosts' slots) need
    // not wait for this bookkeeping.
    this.completing = this.completing.then(async () => {
      try {
        logBatchesCompleted(this.logger, await this.repo.completeBatches(finished));
      } catch (error) {
        this.caught.record('batch_completion', error, "the maintenance leader's sweep stamps these batches later");
      }
    });
  }
}
