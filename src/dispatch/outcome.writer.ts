import { Logger } from '@nestjs/common';
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
  private writing?: Promise<void>;
  private timer?: NodeJS.Timeout;
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

  add(outcome: RecordedOutcome & { batchId: string }): void {
    this.buffer.push(outcome);
    if (this.buffer.length >= this.maxRows) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.intervalMs);
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
  }

  private async write(rows: Array<RecordedOutcome & { batchId: string }>): Promise<void> {
    try {
      await this.repo.recordOutcomes(this.owner, rows);
      this.failures = 0;
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
    try {
      const completed = await this.repo.completeBatches(finished);
      if (completed.length > 0) this.onBatchesCompleted(completed);
    } catch {
      // The heartbeat's completion sweep stamps these batches later.
    }
  }
}
