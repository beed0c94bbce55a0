import { Injectable } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { AppError } from '../common/app.error.js';
import { AppConfig } from '../config/app.config.js';
import { BatchRepository } from './batch.repository.js';

/** How long a key's count stands at least. */
const COUNT_FRESH_MS = 1_000;
/** A count stands this many times as long as it took, so counting a large backlog costs the database at most a tenth of one connection. */
const COUNT_COST_FACTOR = 10;

/**
 * MAX_PENDING_PER_KEY: a batch that would take its key past that many pending
 * callbacks is refused whole (429 `quota_exceeded`, with the counts), before anything
 * of it is stored. One tenant cannot fill the database for everyone.
 *
 * The key's pending rows are counted in the database (BatchRepository.countPending,
 * at most the quota's worth of index entries, ~1 µs each), and a count stands for a
 * second, or ten times as long as it took (a backlog of a million: ~8 s), with the
 * batches this process accepted since added to it: a tenant with a large backlog
 * costs one count per such span, not one per request. So a batch may be refused for
 * up to that span after callbacks finished and made room. Batches checked at the same
 * moment by two API processes each see the count without the other's, so together
 * they can pass the quota by their own sizes; within one process they cannot.
 */
@Injectable()
export class PendingQuota {
  private readonly counted = new Map<string, { pending: number; freshUntil: number }>();

  constructor(
    private readonly config: AppConfig,
    private readonly batches: BatchRepository,
  ) {}

  /** Counts `adding` more pending callbacks against the key's quota, or throws quota_exceeded (nothing counted). */
  async admit(apiKeyId: string, adding: number): Promise<void> {
    const max = this.config.maxPendingPerKey;
    if (max === 0) return;
    let count = this.counted.get(apiKeyId);
    if (!count || performance.now() >= count.freshUntil) {
      const started = performance.now();
      const pending = await this.batches.countPending(apiKeyId, max + 1);
      const took = performance.now() - started;
      count = { pending, freshUntil: performance.now() + Math.max(COUNT_FRESH_MS, COUNT_COST_FACTOR * took) };
      this.counted.set(apiKeyId, count);
    }
    if (count.pending + adding > max) {
      const pending = count.pending > max ? `more than ${max}` : String(count.pending);
      throw new AppError(
        'quota_exceeded',
        `this key has ${pending} callbacks pending and may have at most ${max} (MAX_PENDING_PER_KEY); ` +
          `this batch of ${adding} would pass it, so nothing of it was stored`,
        { pending: count.pending, maxPending: max, batch: adding },
      );
    }
    count.pending += adding;
  }

  /** A batch admitted was not stored after all (a replay, or the insert failed): its callbacks leave the count. */
  notStored(apiKeyId: string, adding: number): void {
    const count = this.counted.get(apiKeyId);
    if (count) count.pending = Math.max(0, count.pending - adding);
  }
}
