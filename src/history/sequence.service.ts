import { Injectable } from '@nestjs/common';
import { BatchService } from '../batches/batch.service.js';
import { CallbackRepository } from '../callbacks/callback.repository.js';
import { buildTimeline, renderSequence, type Timeline } from './sequence.renderer.js';

@Injectable()
export class SequenceService {
  constructor(
    private readonly batches: BatchService,
    private readonly callbacks: CallbackRepository,
  ) {}

  /** The timeline of every attempt in the batch (404 unless it is this key's batch). */
  async timeline(apiKeyId: string, batchId: string): Promise<Timeline> {
    const batch = await this.batches.requireBatch(apiKeyId, batchId);
    return buildTimeline(await this.callbacks.batchAttempts(batchId, batch.createdAt));
  }

  render(timeline: Timeline): string {
    return renderSequence(timeline);
  }
}
