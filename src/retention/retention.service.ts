import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppConfig } from '../config/app.config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { HISTORY_TABLES, partitionWidthMs, partitionsToDrop, partitionsToMake } from './partition.policy.js';
import { PartitionRepository } from './partition.repository.js';
import { RetentionRepository } from './retention.repository.js';

export interface PurgeResult {
  callbacks: number;
  batches: number;
  /** Partitions of the history detached and dropped. */
  partitions: number;
}

/**
 * Keeps the history to RETENTION_HOURS (ARCHITECTURE.md, "History layout"). Finished
 * callbacks are partitioned by when they finished, attempts by when they started; a pass
 * drops each partition wholly before the cutoff, then deletes, in paused statements of
 * RETENTION_PURGE_BATCH rows, the callbacks finished before partitioning, still in the
 * queue's partition, with their attempts, and empty completed batches. Partitions ahead
 * are made by every process at start, before it can finish a row, and by the leader
 * (makePartitions). Run by the maintenance leader every RETENTION_PURGE_INTERVAL_MS;
 * overlapping passes (a lead changing hands) take disjoint rows, and partition changes
 * take a lock. Nothing unfinished is dropped. A partition of attempts goes only once all
 * of it started before the cutoff, so the kept window's latency history stays exact.
 */
@Injectable()
export class RetentionService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(RetentionService.name);
  private running?: Promise<PurgeResult>;
  private stopping = false;

  constructor(
    private readonly config: AppConfig,
    private readonly repo: RetentionRepository,
    private readonly partitions: PartitionRepository,
    private readonly metrics: MetricsService,
  ) {}

  /** The partitions a finished row or a new attempt may need, before this process can write one. */
  async onModuleInit(): Promise<void> {
    await this.makePartitions(new Date());
  }

  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    await this.running?.catch(() => undefined); // waited for only; its error went to whoever started the pass
  }

  /** One purge pass up to now; concurrent calls share the pass under way. */
  purge(now = new Date()): Promise<PurgeResult> {
    this.running ??= this.purgeOnce(now).finally(() => (this.running = undefined));
    return this.running;
  }

  /** Makes the history's partitions from where they end to a while ahead of `now`. */
  async makePartitions(now: Date): Promise<void> {
    const width = partitionWidthMs(this.config.retentionHours);
    for (const { table } of HISTORY_TABLES) {
      const made = await this.partitions.makePartitions(table, (existing) => partitionsToMake(existing, now.getTime(), width));
      if (made.length === 0) continue;
      this.metrics.partitionsMadeAhead(table, made.length);
      this.logger.log(`retention: made ${made.length} partitions of ${table} (${made[0]} to ${made.at(-1)})`);
    }
  }

  private async purgeOnce(now: Date): Promise<PurgeResult> {
    if (this.config.retentionHours === 0) return { callbacks: 0, batches: 0, partitions: 0 };
    const cutoff = new Date(now.getTime() - this.config.retentionHours * 3_600_000);
    // An attempt is written when its call ends: its partition stays until no call under way can have started in it.
    const longestCallMs = this.config.httpMaxTimeoutMs + this.config.dispatchLeaseMarginMs;
    const cutoffOf = (table: string) => (table === 'attempt' ? Math.min(cutoff.getTime(), now.getTime() - longestCallMs) : cutoff.getTime());
    let partitions = 0;
    let oldestAttempts = -Infinity; // where the attempt partitions left after the drops start
    for (const { table } of HISTORY_TABLES) {
      for (const name of await this.partitions.detachedLeftovers(table)) {
        if (this.stopping) break;
        await this.partitions.dropDetached(name);
        this.metrics.partitionDropped(table);
        partitions++;
        this.logger.log(`retention: dropped ${name}, detached by an earlier pass`);
      }
      const existing = await this.partitions.partitionsOf(table);
      const dropped = new Set<string>();
      for (const p of partitionsToDrop(existing, cutoffOf(table))) {
        if (this.stopping) break;
        await this.partitions.dropPartition(table, p.name, p.detaching);
        dropped.add(p.name);
        this.metrics.partitionDropped(table);
        partitions++;
        this.logger.log(`retention: dropped ${p.name}, ${table} rows ${table === 'attempt' ? 'started' : 'finished'} before ${new Date(p.to!).toISOString()}`);
      }
      if (table === 'attempt') oldestAttempts = Math.min(...existing.filter((p) => !dropped.has(p.name)).map((p) => p.from ?? -Infinity));
    }
    const callbacks = await this.inSlices((limit) => this.repo.purgeFinishedCallbacks(cutoff, limit));
    const batches = await this.inSlices((limit) => this.repo.purgeEmptyBatches(cutoff, limit));
    // Stored latency buckets go where attempts may have gone: before the oldest attempt partition, and before the cutoff once rows went one by one.
    const rollupsBefore = callbacks > 0 ? Math.max(oldestAttempts, cutoff.getTime()) : oldestAttempts;
    if (Number.isFinite(rollupsBefore)) await this.repo.purgeLatencyRollups(new Date(rollupsBefore));
    if (callbacks + batches > 0) {
      this.logger.log(`retention: purged ${callbacks} callbacks (with their attempts) and ${batches} batches finished before ${cutoff.toISOString()}`);
    }
    return { callbacks, batches, partitions };
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
