import { Logger } from '@nestjs/common';
import { traceWriteBack } from '../tracing/dispatch.tracing.js';
import { OutcomeRepository, type RecordedOutcome } from './outcome.repository.js';

/**
 * Buffers attempt outcomes and writes them back in batches: every `intervalMs`, or
 * at once when `maxRows` are waiting. One write runs at a time. A failed write
 * (database away) keeps its rows and tries again; nothing is dropped here. Rows
 * whose lease was lost meanwhile are refused by the repository, not by this class.
 */
export class OutcomeWriter {
  private readonly logger = new Logger(OutcomeWriter.name);
  private buffer: Array<RecordedOutcome & { batchId: string }> = [];
  /** Outcomes not yet written back, per host: their rows still hold a slot of the host's cap. */
  private readonly unwritten = new Map<string, number>();
  private writing?: Promise<void>;
  /** Batch completion stamps, one after the other, off the write-back's path. */
  private completing: Promise<void> = Promise.resolve();
  private timer?: NodeJS.Timeout;
  private soon?: NodeJS.Immediate;
  private failures = 0;

  constructor(
    private readonly repo: OutcomeRepository,
    private readonly owner: string,
    private readonly intervalMs: number,
    private readonly maxRows: number,
    private readonly onBatchesCompleted: (batches: Array<{ id: string; completedAt: Date }>) => void,
    /** Told the earliest retry the write-back scheduled, so the worker can wake for it. */
    private readonly onRetryScheduled: (at: Date) => void = () => undefined,
    /** Told after each write-back landed (hosts' in-flight counts went down). */
    private readonly onWritten: () => void = () => undefined,
  ) {}

  get pending(): number {
    return this.buffer.length;
  }

  /** Outcomes of `host` buffered or being written. */
  pendingFor(host: string): number {
    return this.unwritten.get(host) ?? 0;
  }

  add(outcome: RecordedOutcome & { batchId: string }): void {
    this.buffer.push(outcome);
    this.unwritten.set(outcome.host, this.pendingFor(outcome.host) + 1);
    if (this.buffer.length >= this.maxRows) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.intervalMs);
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

  /** Flushes until empty or `deadline` (ms since epoch) passes. */
  async drain(deadline: number): Promise<void> {
    while (this.buffer.length > 0 && Date.now() < deadline) {
      await this.flush();
      if (this.buffer.length > 0) await new Promise((r) => setTimeout(r, 200));
    }
    await this.completing;
  }

  private async write(rows: Array<RecordedOutcome & { batchId: string }>): Promise<void> {
    try {
      await traceWriteBack(rows, () => this.repo.recordOutcomes(this.owner, rows));
      this.failures = 0;
      for (const r of rows) {
        const n = this.pendingFor(r.host) - 1;
        if (n > 0) this.unwritten.set(r.host, n);
        else this.unwritten.delete(r.host);
      }
      const retryAt = Math.min(...rows.map((r) => r.nextAttemptAt?.getTime() ?? Infinity));
      if (retryAt !== Infinity) this.onRetryScheduled(new Date(retryAt));
      this.onWritten();
    } catch (error) {
      this.buffer.unshift(...rows);
      if (this.failures++ % 50 === 0) this.logger.warn(`write-back of ${rows.length} outcomes failed, will retry: ${(error as Error).message}`);
      this.timer ??= setTimeout(() => void this.flush(), Math.min(100 * this.failures, 2000));
      return;
    }
    const finished = [...new Set(rows.filter((r) => r.completedAt).map((r) => r.batchId))];
    if (finished.length === 0) return;
    // Not awaited by the write: the next write-back (which frees hosts' slots) need
    // not wait for this bookkeeping.
    this.completing = this.completing.then(async () => {
      try {
        const completed = await this.repo.completeBatches(finished);
        if (completed.length > 0) this.onBatchesCompleted(completed);
      } catch {
        // The heartbeat's completion sweep stamps these batches later.
      }
    });
  }
}
