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
 * MAX_PENDING_PER_KEY and MAX_PENDING_BYTES_PER_KEY: a batch or event that would take its
 * key past that many pending callbacks, or that many bytes of payload pending, is refused
 * whole (429 `quota_exceeded`, with the counts) before anything of it is stored, so one
 * tenant cannot fill the database for everyone. Bytes are the bodies as stored: a batch's
 * callbacks each their own, an event's payload once for all its deliveries. A count
 * (BatchRepository.countPending) stands for a second, or ten times as long as it took,
 * with what this process accepted since added: a tenant with a large backlog costs one
 * count per such span, and room made meanwhile shows at its end. Two API processes
 * checking at once do not see each other's batches, so together they can pass the quota
 * by their own sizes (ARCHITECTURE.md, "Pending quota").
 */
@Injectable()
export class PendingQuota {
  private readonly counted = new Map<string, { pending: number; bytes: number; freshUntil: number }>();

  constructor(
    private readonly config: AppConfig,
    private readonly batches: BatchRepository,
  ) {}

  /** Counts `adding` more pending callbacks holding `bytes` of payload against the key's quotas, or throws quota_exceeded (nothing counted). */
  async admit(apiKeyId: string, adding: number, bytes: number): Promise<void> {
    const max = this.config.maxPendingPerKey;
    const maxBytes = this.config.maxPendingBytesPerKey;
    if (max === 0 && maxBytes === 0) return;
    let count = this.counted.get(apiKeyId);
    if (!count || performance.now() >= count.freshUntil) {
      const started = performance.now();
      const found = await this.batches.countPending(apiKeyId, max + 1);
      const took = performance.now() - started;
      count = { pending: found.n, bytes: found.bytes, freshUntil: performance.now() + Math.max(COUNT_FRESH_MS, COUNT_COST_FACTOR * took) };
      this.counted.set(apiKeyId, count);
    }
    if (max > 0 && count.pending + adding > max) {
      const pending = count.pending > max ? `more than ${max}` : String(count.pending);
      throw new AppError(
        'quota_exceeded',
        `this key has ${pending} callbacks pending and may have at most ${max} (MAX_PENDING_PER_KEY); ` +
          `this batch of ${adding} would pass it, so nothing of it was stored`,
        { pending: count.pending, maxPending: max, batch: adding },
      );
    }
    if (maxBytes > 0 && count.bytes + bytes > maxBytes) {
      throw new AppError(
        'quota_exceeded',
        `this key's pending callbacks hold ${count.bytes} bytes of payload and may hold at most ${maxBytes} (MAX_PENDING_BYTES_PER_KEY); ` +
          `these ${bytes} bytes would pass it, so nothing of it was stored`,
        { pendingBytes: count.bytes, maxPendingBytes: maxBytes, bytes },
      );
    }
    count.pending += adding;
    count.bytes += bytes;
  }

  /** A batch admitted was not stored after all (a replay, or the insert failed): its callbacks and bytes leave the count. */
  notStored(apiKeyId: string, adding: number, bytes: number): void {
    const count = this.counted.get(apiKeyId);
    if (!count) return;
    count.pending = Math.max(0, count.pending - adding);
    count.bytes = Math.max(0, count.bytes - bytes);
  }
}
