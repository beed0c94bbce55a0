import { Injectable } from '@nestjs/common';
import type { CallbackStatus } from '../callbacks/callback.status.js';
import { DueNotifier } from '../database/due.notifier.js';
import { PrismaService } from '../database/prisma.service.js';
import { StatementCoalescer } from '../database/statement.coalescer.js';

export interface NewBatch {
  id: string;
  apiKeyId: string;
  label: string | null;
  idempotencyKey: string | null;
  requestHash: string | null;
  total: number;
}

/**
 * A callback as stored. Its strings must be well-formed UTF-16 (no lone surrogate):
 * they reach Postgres inside a JSON document, where an escaped lone surrogate is an
 * error, not the U+FFFD that encoding it as UTF-8 used to make of it.
 */
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

interface PendingBatch {
  batch: NewBatch;
  rows: NewCallback[];
}

/** Ingest statements running at once; more batches arriving meanwhile share the next one. */
const INSERTS_IN_FLIGHT = 4;
/** Callbacks one ingest statement stores at most (a bigger batch still goes whole, alone). */
const INSERT_MAX_ROWS = 5_000;

@Injectable()
export class BatchRepository {
  private readonly inserts = new StatementCoalescer<PendingBatch, boolean>((items) => this.insertBatches(items), {
    maxInFlight: INSERTS_IN_FLIGHT,
    maxWeight: INSERT_MAX_ROWS,
    weight: (item) => item.rows.length,
  });

  constructor(
    private readonly prisma: PrismaService,
    private readonly due: DueNotifier,
  ) {}

  /**
   * Stores a batch and all its callbacks atomically; resolves once committed (a
   * 202 promises durability, so ingest keeps `synchronous_commit` on). Concurrent
   * batches share one statement and so one commit (see StatementCoalescer): a
   * one-callback batch otherwise pays a whole statement and WAL flush for one row.
   * The workers are woken after the commit by one coalesced NOTIFY.
   */
  async insertBatch(batch: NewBatch, rows: NewCallback[], dueNow: boolean): Promise<InsertResult> {
    const inserted = await this.inserts.submit({ batch, rows });
    if (!inserted) {
      const existing = await this.prisma.batch.findFirstOrThrow({ where: { apiKeyId: batch.apiKeyId, idempotencyKey: batch.idempotencyKey } });
      return { inserted: false, existing };
    }
    if (dueNow) this.due.notifyDue();
    return { inserted: true };
  }

  /**
   * Stores batches and all their callbacks in one statement (so one implicit
   * transaction) and one round trip, also for 10,000 rows. The input is one JSON
   * document, `[{batch, rows}]`, unpacked by `json_to_recordset`: one parameter,
   * encoded by one native JSON.stringify, where a dozen array parameters cost Prisma
   * and pg a conversion and an escape per element (~12% of the service CPU at 1,000
   * callbacks per batch; `npm run bench:ingest`). The batch rows go in first (a CTE);
   * the callbacks join them by batch id, so a batch's callbacks are only inserted
   * when the batch was. The foreign key check runs at the end of the statement and
   * sees the new batch rows. With an idempotency key the batch insert is `ON
   * CONFLICT DO NOTHING` on (api_key_id, idempotency_key): a concurrent duplicate
   * waits for the first to commit and inserts nothing (nor do two duplicates in one
   * statement: the second is skipped). Takes no lock but the new rows' and, for a
   * duplicate, that unique index entry's. Answers, per batch in order, whether it
   * was inserted. Not an interactive transaction: that cost four round trips.
   */
  private async insertBatches(items: PendingBatch[]): Promise<boolean[]> {
    const created = await this.prisma.$queryRaw<Array<{ id: string }>>`
      WITH input AS MATERIALIZED (
        SELECT nb.*, g.rows
        FROM json_to_recordset(${JSON.stringify(items)}::json) AS g(batch json, rows json),
             json_to_record(g.batch) AS nb(id uuid, "apiKeyId" uuid, label text, "idempotencyKey" text, "requestHash" text, total int)
      ), b AS (
        INSERT INTO batch (id, api_key_id, label, idempotency_key, request_hash, total)
        SELECT id, "apiKeyId", label, "idempotencyKey", "requestHash", total FROM input
        ON CONFLICT (api_key_id, idempotency_key) DO NOTHING
        RETURNING id, api_key_id
      ), c AS (
        INSERT INTO callback (id, batch_id, api_key_id, external_id, url, host, method, headers, body, timeout_ms,
                              max_attempts, retry_delays_ms, status, next_attempt_at)
        SELECT u.id, b.id, b.api_key_id, u."externalId", u.url, u.host, u.method, u.headers::jsonb, u.body, u."timeoutMs",
               u."maxAttempts", u."retryDelaysMs"::int[], 'pending', COALESCE(u."runAt", now())
        FROM input JOIN b ON b.id = input.id,
             json_to_recordset(input.rows) AS u(id uuid, "externalId" text, url text, host text, method text, headers text, body text,
                                                "timeoutMs" int, "maxAttempts" int, "retryDelaysMs" text, "runAt" timestamptz)
      )
      SELECT id FROM b`;
    const ids = new Set(created.map((r) => r.id));
    return items.map((item) => ids.has(item.batch.id));
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
