import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppConfig } from '../config/app.config.js';
import { RetentionRepository } from './retention.repository.js';

export interface PurgeResult {
  callbacks: number;
  batches: number;
}

/**
 * Purges finished callbacks (with their attempts) and then empty completed batches
 * older than RETENTION_HOURS, in statements of RETENTION_PURGE_BATCH rows with a
 * pause between them, so dispatch never waits long behind it. Run by the
 * maintenance leader (dispatch/maintenance.service.ts) every
 * RETENTION_PURGE_INTERVAL_MS; purges that overlap (a lead changing hands) take
 * disjoint rows.
 *
 * The latency history of the kept window stays exact: an attempt is only deleted
 * with its callback, once that callback finished before the cutoff, and every
 * attempt of it started before it finished.
 */
@Injectable()
export class RetentionService implements OnModuleDestroy {
  private readonly logger = new Logger(RetentionService.name);
  private running?: Promise<PurgeResult>;
  private stopping = false;

  constructor(
    private readonly config: AppConfig,
    private readonly repo: RetentionRepository,
  ) {}

  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    await this.running?.catch(() => undefined); // waited for only; its error went to whoever started the pass
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
