import { Injectable } from '@nestjs/common';
import { optionalDestinationParam } from '../common/params.js';
import { ReadReplica } from '../database/read-replica.js';
import { ReceiverService } from '../receivers/receiver.service.js';
import type { LatencyHistoryDto, LatencyQueryDto } from './dto/latency.dto.js';
import { resolveLatencyWindow } from './latency.policy.js';
import { LatencyRepository } from './latency.repository.js';

const ms = (v: number) => Math.round(v * 1000) / 1000;

@Injectable()
export class LatencyService {
  constructor(
    private readonly repo: LatencyRepository,
    private readonly receivers: ReceiverService,
    private readonly reads: ReadReplica,
  ) {}

  /** The key's latency history: per bucket the count, successes, failures and duration percentiles; on the replica when it serves the key. */
  async latencyHistory(apiKeyId: string, q: LatencyQueryDto): Promise<LatencyHistoryDto> {
    const window = resolveLatencyWindow({ from: q.from ? new Date(q.from) : undefined, to: q.to ? new Date(q.to) : undefined, bucket: q.bucket }, new Date());
    const receiver = q.receiver === undefined ? undefined : await this.receivers.require(apiKeyId, q.receiver);
    const filter = { apiKeyId, ...window, host: optionalDestinationParam('host', q.host), batchId: q.batch?.toLowerCase(), receiverId: receiver?.id };
    const rows = await this.reads.read(apiKeyId, (reader) => this.repo.bucketStats(filter, reader));
    return {
      bucket: window.bucket,
      from: window.from.toISOString(),
      to: window.to.toISOString(),
      items: rows.map((r) => ({
        start: r.start.toISOString(),
        count: r.count,
        ok: r.ok,
        failed: r.count - r.ok,
        p50: ms(r.pct[0]),
        p90: ms(r.pct[1]),
        p99: ms(r.pct[2]),
        max: ms(r.max),
      })),
    };
  }
}
