import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppConfig } from '../config/app.config.js';
import { RetentionRepository } from './retention.repository.js';

const JOB = 'retention-purge';

export interface PurgeResult {
  callbacks: number;
  batches: number;
}

/**
 * Purges finished callbacks (with their attempts) and then empty completed batches
 * older than RETENTION_HOURS, in statements of RETENTION_PURGE_BATCH rows with a
 * pause between them, so dispatch never waits long behind it. Runs on workers
 * every RETENTION_PURGE_INTERVAL_MS; several workers purging at once take
 * disjoint rows.
 *
 * The latency history of the kept window stays exact: an attempt is only deleted
 * with its callback, once that callback finished before the cutoff, and every
 * attempt of it started before it finished.
 */
@Injectable()
export class RetentionService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(RetentionService.name);
  private running?: Promise<PurgeResult>;
  private stopping = false;

  constructor(
    private readonly config: AppConfig,
    private readonly repo: RetentionRepository,
    private readonly scheduler: SchedulerRegistry,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.role === 'api' || this.config.retentionHours === 0) return;
    const timer = setInterval(() => void this.purge().catch((e) => this.logger.warn(`purge failed: ${(e as Error).message}`)), this.config.retentionPurgeIntervalMs);
    this.scheduler.addInterval(JOB, timer);
  }

  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    if (this.scheduler.doesExist('interval', JOB)) this.scheduler.deleteInterval(JOB);
    await this.running?.catch(() => undefined);
  }

  /** One purge pass up to now; concurrent calls share the pass under way. */
  purge(now = new Date()): Promise<PurgeResult> {
    this.running ??= this.purgeOnce(now).finally(() => (this.running = undefined));
    return this.running;
  }

  private async purgeOnce(now: Date): Promise<PurgeResult> {
    if (this.config.retentionHours === 0) return { callbacks: 0, batches: 0 };
    const cutoff = new Date(now.getTime() - this.config.retentionHours * 3_600_000);
    const callbacks = await this.inSlices((limit) => this.repo.purgeFinishedCallbacks(cutoff, limit));
    const batches = await this.inSlices((limit) => this.repo.purgeEmptyBatches(cutoff, limit));
    if (callbacks + batches > 0) {
      this.logger.log(`retention: purged ${callbacks} callbacks (with their attempts) and ${batches} batches finished before ${cutoff.toISOString()}`);
    }
    return { callbacks, batches };
  }

  /** Repeats `slice` until it deletes less than a full slice (or the service stops), pausing between slices. */
  private async inSlices(slice: (limit: number) => Promise<number>): Promise<number> {
    const limit = this.config.retentionPurgeBatch;
    let total = 0;
    for (;;) {
      const n = await slice(limit);
      total += n;
      if (n < limit || this.stopping) return total;
      await sleep(this.config.retentionPurgePauseMs);
    }
  }
}
