import { Injectable } from '@nestjs/common';
import { OUTCOME } from '../common/states.js';
import { ApiDatabase } from '../database/api-database.js';
import { Prisma } from '../generated/prisma/client.js';

export interface LatencyFilter {
  apiKeyId: string;
  from: Date;
  to: Date;
  bucketMs: number;
  host?: string;
  batchId?: string;
  /** A receiver of the key (resolved by name before). */
  receiverId?: string;
}

export interface LatencyRow {
  start: Date;
  count: number;
  ok: number;
  /** p50, p90, p99 */
  pct: number[];
  max: number;
}

@Injectable()
export class LatencyRepository {
  constructor(private readonly db: ApiDatabase) {}

  /**
   * Per-bucket counts and exact duration percentiles of one key's attempts, in one
   * read-only statement (no locks). One small aggregate per bucket (LATERAL over
   * the bucket starts) instead of one GROUP BY: each bucket is its own range scan
   * of `attempt_api_key_id_started_at_idx (api_key_id, started_at) INCLUDE (host,
   * outcome, duration_ms)`, index-only once vacuumed, and its percentiles sort only
   * that bucket's durations in memory. A GROUP BY sorts the whole window (a month
   * of a million attempts) on disk first: 1.7 s against 0.3 s measured. The three
   * percentiles share one sort (an ordered-set aggregate with an array argument).
   * A batch filter reads the batch's callback ids through `callback_batch_id_status_idx`.
   * A receiver filter reads `attempt_receiver_idx (receiver_id, started_at) INCLUDE
   * (outcome, duration_ms)` instead (the receiver is the key's, checked before).
   */
  bucketStats(f: LatencyFilter): Promise<LatencyRow[]> {
    const width = Prisma.sql`(${f.bucketMs}::int * interval '1 millisecond')`;
    const host = f.host === undefined ? Prisma.empty : Prisma.sql`AND a.host = ${f.host}`;
    const batch =
      f.batchId === undefined
        ? Prisma.empty
        : Prisma.sql`AND a.callback_id IN (SELECT id FROM callback WHERE batch_id = ${f.batchId}::uuid AND api_key_id = ${f.apiKeyId}::uuid)`;
    const owner = f.receiverId === undefined ? Prisma.sql`a.api_key_id = ${f.apiKeyId}::uuid` : Prisma.sql`a.receiver_id = ${f.receiverId}::uuid`;
    return this.db.query<LatencyRow>(Prisma.sql`
      SELECT b.start, s.count, s.ok, s.pct, s.max
      FROM generate_series(date_bin(${width}, ${f.from}::timestamptz, timestamptz '2000-01-01 00:00:00+00'),
                           ${f.to}::timestamptz - interval '1 millisecond', ${width}) AS b(start)
      CROSS JOIN LATERAL (
        SELECT count(*)::int AS count,
               (count(*) FILTER (WHERE a.outcome = ${OUTCOME.success}))::int AS ok,
               percentile_cont(ARRAY[0.5, 0.9, 0.99]::float8[]) WITHIN GROUP (ORDER BY a.duration_ms) AS pct,
               max(a.duration_ms) AS max
        FROM attempt a
        WHERE ${owner}
          AND a.started_at >= greatest(b.start, ${f.from}::timestamptz)
          AND a.started_at < least(b.start + ${width}, ${f.to}::timestamptz)
          ${host} ${batch}
      ) s
      WHERE s.count > 0
      ORDER BY b.start`);
  }
}
