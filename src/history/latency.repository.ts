import { Injectable } from '@nestjs/common';
import { OUTCOME } from '../model/states.js';
import { ApiDatabase, WITHOUT_JIT } from '../database/api-database.js';
import { PrismaService } from '../database/prisma.service.js';
import type { Reader } from '../database/read-replica.js';
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
  /** The primary, where a read goes unless given a replica's reader (ReadReplica). */
  private readonly primary: Reader;

  constructor(
    private readonly prisma: PrismaService,
    private readonly db: ApiDatabase,
  ) {
    this.primary = { prisma, db };
  }

  /**
   * Per-bucket counts and exact duration percentiles of one key's attempts. Filtered
   * (host, batch, receiver): computed from the attempts (`liveBuckets`). The key's whole
   * history: closed buckets are read from `latency_rollup` where stored, and computed and
   * stored where not (`rolledBuckets`).
   */
  bucketStats(f: LatencyFilter, reader = this.primary): Promise<LatencyRow[]> {
    return reader.db.query<LatencyRow>(latencyStatement(f, !reader.standby), WITHOUT_JIT);
  }
}

/**
 * bucketStats' statement: filtered (host, batch, receiver) from the attempts alone, else
 * through the stored buckets, storing the closed ones it computes unless `store` is
 * false (on a read replica, which takes no writes: they are computed each time there).
 */
export function latencyStatement(f: LatencyFilter, store = true): Prisma.Sql {
  const filtered = f.host !== undefined || f.batchId !== undefined || f.receiverId !== undefined;
  return filtered ? liveBuckets(f) : rolledBuckets(f, store);
}

const widthOf = (f: LatencyFilter) => Prisma.sql`(${f.bucketMs}::int * interval '1 millisecond')`;

/** The starts of the buckets that meet [from, to), as `b(start)`. */
const bucketStarts = (f: LatencyFilter) => Prisma.sql`
  generate_series(date_bin(${widthOf(f)}, ${f.from}::timestamptz, timestamptz '2000-01-01 00:00:00+00'),
                  ${f.to}::timestamptz - interval '1 millisecond', ${widthOf(f)}) AS b(start)`;

/**
 * One bucket's aggregate over its attempts (within [from, to)), for `b.start`: one small
 * aggregate per bucket (LATERAL over the bucket starts) instead of one GROUP BY: each
 * bucket is its own range scan of `attempt_api_key_id_started_at_idx (api_key_id,
 * started_at) INCLUDE (host, outcome, duration_ms)`, index-only once vacuumed, and its
 * percentiles sort only that bucket's durations in memory, where a GROUP BY sorts the
 * whole window on disk first. The three percentiles share one sort (an ordered-set
 * aggregate with an array argument). A batch filter reads the batch's callback ids
 * through `callback_batch_id_status_idx`. A receiver filter reads `attempt_receiver_idx
 * (receiver_id, started_at) INCLUDE (outcome, duration_ms)` instead (the receiver is the
 * key's, checked before).
 */
function bucketAggregate(f: LatencyFilter): Prisma.Sql {
  const host = f.host === undefined ? Prisma.empty : Prisma.sql`AND a.host = ${f.host}`;
  const batch =
    f.batchId === undefined
      ? Prisma.empty
      : Prisma.sql`AND a.callback_id IN (SELECT id FROM callback WHERE batch_id = ${f.batchId}::uuid AND api_key_id = ${f.apiKeyId}::uuid)`;
  const owner = f.receiverId === undefined ? Prisma.sql`a.api_key_id = ${f.apiKeyId}::uuid` : Prisma.sql`a.receiver_id = ${f.receiverId}::uuid`;
  return Prisma.sql`
    SELECT count(*)::int AS count,
           (count(*) FILTER (WHERE a.outcome = ${OUTCOME.success}))::int AS ok,
           percentile_cont(ARRAY[0.5, 0.9, 0.99]::float8[]) WITHIN GROUP (ORDER BY a.duration_ms) AS pct,
           max(a.duration_ms) AS max
    FROM attempt a
    WHERE ${owner}
      AND a.started_at >= greatest(b.start, ${f.from}::timestamptz)
      AND a.started_at < least(b.start + ${widthOf(f)}, ${f.to}::timestamptz)
      ${host} ${batch}`;
}

/** Every bucket computed from the attempts: one read-only statement, no locks. */
const liveBuckets = (f: LatencyFilter) => Prisma.sql`
  SELECT b.start, s.count, s.ok, s.pct, s.max
  FROM ${bucketStarts(f)}
  CROSS JOIN LATERAL (${bucketAggregate(f)}) s
  WHERE s.count > 0
  ORDER BY b.start`;

/** rolledBuckets' storing of the closed buckets it computed (`live`). */
const storeClosed = (f: LatencyFilter) => Prisma.sql`, stored AS (
    INSERT INTO latency_rollup (api_key_id, bucket_ms, start, count, ok, pct, max)
    SELECT ${f.apiKeyId}::uuid, ${f.bucketMs}::int, start, count, ok, coalesce(pct, '{}'), max FROM live WHERE closed
    ON CONFLICT DO NOTHING
  )`;

/**
 * The key's whole history in one statement. A bucket wholly inside [from, to) that ended
 * before `latency_rollup_closed_before()` (10 minutes ago: no call under way can still
 * add an attempt to it) is closed: it is read from its `latency_rollup` row (primary key
 * range), or computed as in `liveBuckets` and stored (ON CONFLICT DO NOTHING: two reads
 * computing the same bucket store it once). The others (the open ones, and the partial
 * ones at the window's ends) are computed every time. A stored bucket stays true: an
 * attempt written into a closed bucket later deletes it (trigger `attempt_late_rollups`),
 * and retention deletes those whose attempts it drops (purgeLatencyRollups). The one gap:
 * such a late attempt committed while a read that began before it computes its bucket.
 */
const rolledBuckets = (f: LatencyFilter, store: boolean) => Prisma.sql`
  WITH b AS MATERIALIZED (
    SELECT b.start, b.start >= ${f.from}::timestamptz AND b.start + ${widthOf(f)} <= least(${f.to}::timestamptz, latency_rollup_closed_before()) AS closed
    FROM ${bucketStarts(f)}
  ), kept AS MATERIALIZED (
    SELECT r.start, r.count, r.ok, r.pct, r.max FROM latency_rollup r JOIN b ON b.start = r.start AND b.closed
    WHERE r.api_key_id = ${f.apiKeyId}::uuid AND r.bucket_ms = ${f.bucketMs}::int
      AND r.start >= (SELECT min(start) FROM b) AND r.start < ${f.to}::timestamptz
  ), live AS MATERIALIZED (
    SELECT b.start, b.closed, s.count, s.ok, s.pct, s.max
    FROM (SELECT * FROM b WHERE NOT EXISTS (SELECT 1 FROM kept WHERE kept.start = b.start)) b
    CROSS JOIN LATERAL (${bucketAggregate(f)}) s
  )${store ? storeClosed(f) : Prisma.empty}
  SELECT start, count, ok, pct, max FROM kept WHERE count > 0
  UNION ALL
  SELECT start, count, ok, pct, max FROM live WHERE count > 0
  ORDER BY start`;
