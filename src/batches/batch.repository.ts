import { Injectable } from '@nestjs/common';
import type { CallbackStatus } from '../callbacks/callback.status.js';
import { DueNotifier } from '../database/due.notifier.js';
import { PrismaService } from '../database/prisma.service.js';

export interface NewBatch {
  id: string;
  apiKeyId: string;
  label: string | null;
  idempotencyKey: string | null;
  requestHash: string | null;
  total: number;
}

export interface NewCallback {
  id: string;
  externalId: string | null;
  url: string;
  host: string;
  method: string;
  headers: string;
  body: string | null;
  timeoutMs: number;
  maxAttempts: number;
  /** Postgres int[] literal, or null for the configured schedule. */
  retryDelaysMs: string | null;
  runAt: Date | null;
}

export interface BatchRow {
  id: string;
  apiKeyId: string;
  label: string | null;
  requestHash: string | null;
  total: number;
  createdAt: Date;
  completedAt: Date | null;
}

export type InsertResult = { inserted: true } | { inserted: false; existing: BatchRow };

@Injectable()
export class BatchRepository {
  constructor(
    private readonly prisma: PrismaService,
    private readonly due: DueNotifier,
  ) {}

  /**
   * Stores a batch and all its callbacks in one statement (so one implicit
   * transaction: a batch is whole or absent) and one round trip, also for 10,000
   * rows: the batch row in a CTE, the callbacks with `INSERT … SELECT FROM unnest(…)`
   * joined to it, so they are only inserted when the batch was. The foreign key
   * check runs at the end of the statement and sees the new batch row. With an
   * idempotency key the batch insert is `ON CONFLICT DO NOTHING` on (api_key_id,
   * idempotency_key): a concurrent duplicate waits for the first to commit, inserts
   * nothing, and gets the existing batch. Not an interactive transaction: that cost
   * four round trips and most of the ingest CPU (measured with `npm run bench:ingest`).
   * The workers are woken after the commit by one coalesced NOTIFY.
   */
  async insertBatch(batch: NewBatch, rows: NewCallback[], dueNow: boolean): Promise<InsertResult> {
    const col = <K extends keyof NewCallback>(k: K) => rows.map((r) => r[k]);
    const created = await this.prisma.$queryRaw<Array<{ id: string }>>`
      WITH b AS (
        INSERT INTO batch (id, api_key_id, label, idempotency_key, request_hash, total)
        VALUES (${batch.id}::uuid, ${batch.apiKeyId}::uuid, ${batch.label}, ${batch.idempotencyKey}, ${batch.requestHash}, ${batch.total})
        ON CONFLICT (api_key_id, idempotency_key) DO NOTHING
        RETURNING id, api_key_id
      ), c AS (
        INSERT INTO callback (id, batch_id, api_key_id, external_id, url, host, method, headers, body, timeout_ms,
                              max_attempts, retry_delays_ms, status, next_attempt_at)
        SELECT u.id, b.id, b.api_key_id, u.external_id, u.url, u.host, u.method, u.headers::jsonb,
               u.body, u.timeout_ms, u.max_attempts, u.retry_delays_ms::int[], 'pending', COALESCE(u.run_at, now())
        FROM b, unnest(${col('id')}::uuid[], ${col('externalId')}::text[], ${col('url')}::text[], ${col('host')}::text[],
                       ${col('method')}::text[], ${col('headers')}::text[], ${col('body')}::text[], ${col('timeoutMs')}::int[],
                       ${col('maxAttempts')}::int[], ${col('retryDelaysMs')}::text[], ${col('runAt')}::timestamptz[])
             AS u(id, external_id, url, host, method, headers, body, timeout_ms, max_attempts, retry_delays_ms, run_at)
      )
      SELECT id FROM b`;
    if (created.length === 0) {
      const existing = await this.prisma.batch.findFirstOrThrow({ where: { apiKeyId: batch.apiKeyId, idempotencyKey: batch.idempotencyKey } });
      return { inserted: false, existing };
    }
    if (dueNow) this.due.notifyDue();
    return { inserted: true };
  }

  findBatch(apiKeyId: string, id: string): Promise<BatchRow | null> {
    return this.prisma.batch.findFirst({ where: { id, apiKeyId } });
  }

  listBatches(apiKeyId: string, limit: number, before?: string): Promise<BatchRow[]> {
    return this.prisma.batch.findMany({
      where: { apiKeyId, ...(before ? { id: { lt: before } } : {}) },
      orderBy: { id: 'desc' },
      take: limit,
    });
  }

  /** Callback counts by status; served by `callback_batch_id_status_idx`. */
  async countByStatus(batchIds: string[]): Promise<Array<{ batchId: string; status: CallbackStatus; n: number }>> {
    if (batchIds.length === 0) return [];
    return this.prisma.$queryRaw`
      SELECT batch_id AS "batchId", status, count(*)::int AS n FROM callback
      WHERE batch_id = ANY(${batchIds}::uuid[]) GROUP BY batch_id, status`;
  }

  /** First attempt start and last attempt end over the batch: its makespan on the wire. */
  async attemptSpan(batchId: string): Promise<{ firstStartAt: Date | null; lastEndAt: Date | null }> {
    const rows = await this.prisma.$queryRaw<Array<{ firstStartAt: Date | null; lastEndAt: Date | null }>>`
      SELECT min(a.started_at) AS "firstStartAt",
             max(a.started_at + a.duration_ms * interval '1 millisecond') AS "lastEndAt"
      FROM callback c JOIN attempt a ON a.callback_id = c.id
      WHERE c.batch_id = ${batchId}::uuid`;
    return rows[0] ?? { firstStartAt: null, lastEndAt: null };
  }

  /** Ids and external ids in request order (ids are time-ordered per batch). */
  callbackIds(batchId: string): Promise<Array<{ id: string; externalId: string | null }>> {
    return this.prisma.callback.findMany({ where: { batchId }, select: { id: true, externalId: true }, orderBy: { id: 'asc' } });
  }
}
