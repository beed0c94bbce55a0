import { Injectable } from '@nestjs/common';
import { type CallbackStatus, STATUS } from '../model/states.js';
import { ApiDatabase, WITHOUT_JIT } from '../database/api-database.js';
import { DueNotifier } from '../database/due.notifier.js';
import { PrismaService } from '../database/prisma.service.js';
import { pgArray } from '../database/pg-array.js';
import type { Reader } from '../database/read-replica.js';
import { StatementCoalescer } from '../database/statement.coalescer.js';
import { Prisma } from '../generated/prisma/client.js';
import { dueAt } from '../queue/receiver-hold.sql.js';
import { batchProgress } from '../queue/batch-attempts.sql.js';
import { COUNT_PLANNER, countPending } from './pending.sql.js';

export interface NewBatch {
  id: string;
  apiKeyId: string;
  label: string | null;
  idempotencyKey: string | null;
  requestHash: string | null;
  total: number;
  /** Its own target for its batch.completed (src/operator-events): a url and its destination, and the receiver when one was named. */
  notify?: { url: string; host: string; receiverId: string | null } | null;
  /** The bytes of its callbacks' bodies (MAX_PENDING_BYTES_PER_KEY sums them over the key's open batches). */
  bodyBytes: number;
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
  /** 0 high, 1 normal, 2 low. */
  priority: number;
  orderingKey: string | null;
  /** The accepting request's trace context (tracing on), so attempts join the caller's trace. */
  traceparent: string | null;
  /** Its receiver (resolved from the name at ingest), or null. */
  receiverId: string | null;
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

/** Inserted: the row's `created_at` (the statement's `now()`, what a read of the batch shows). */
export type InsertResult = { inserted: true; createdAt: Date } | { inserted: false; existing: BatchRow };

interface PendingBatch {
  batch: NewBatch;
  rows: NewCallback[];
}

/** Ingest statements running at once; more batches arriving meanwhile share the next one. */
const INSERTS_IN_FLIGHT = 2;
/** Callbacks one ingest statement stores at most (a bigger batch still goes whole, alone). */
const INSERT_MAX_ROWS = 5_000;

/** A receiver id no row has (uuidv7 ids are never all zero): what the ingest stores for a receiver being deleted, for the foreign key to refuse. */
const NO_RECEIVER = '00000000-0000-0000-0000-000000000000';

/**
 * Stores batches and all their callbacks in one statement (so one implicit transaction)
 * and one round trip, also for 10,000 rows: the batch rows in a CTE, the callbacks with
 * `INSERT … SELECT FROM unnest(…)` joined to it by batch id, so a batch's callbacks are
 * only inserted when the batch was. The callback columns go as array literals built here
 * (`pgArray`), one text parameter each. `callback.batch_id` has no foreign key to check
 * row by row: the join to `b` is what ties each callback to its batch (migration
 * callback_batch_no_fkey). With an idempotency key the batch insert is
 * `ON CONFLICT DO NOTHING` on (api_key_id, idempotency_key): a concurrent duplicate waits
 * for the first to commit and inserts nothing (nor do two duplicates in one statement:
 * the second is skipped). Takes no lock but the new rows' and, for a duplicate, that
 * unique index entry's. Answers the inserted batches' ids with their `created_at` (the
 * statement's `now()`). Runs past Prisma (ApiDatabase), as a hot-path statement, and not
 * as an interactive transaction, which would cost four round trips.
 *
 * Callbacks of a receiver are stored `held` when it is disabled (due HELD_SHIFT later,
 * see receiver-hold.sql.ts). Its row is read `FOR SHARE` (`r`), so a concurrent disable
 * or enable (which locks it, then flips `held` on its unfinished callbacks) either waits
 * for this statement to commit and then sees its rows, or commits first and is read here
 * as it then is. A receiver being deleted (`deleted_at` set) fails the statement on the
 * foreign key.
 *
 * Lock order: the receivers in id order, as the write-back locks them (recordWithHealth);
 * read in the scan's order (a sequential scan's is the heap's, which every update of a
 * receiver's health reshuffles), a statement of two receivers could deadlock with a
 * write-back of the same two. The batches go in Idempotency-Key order, so two statements
 * that both carry the same two keys (a client's replays, coalesced in another order) wait
 * for each other in one direction only. What can still end the statement (a receiver
 * locked out of that order elsewhere, for one) is retried (ApiDatabase:
 * PgStatements.retryConflicts); it is one statement alone in its transaction, so a retry
 * stores nothing twice.
 */
function insertBatchesStatement(unordered: PendingBatch[]): Prisma.Sql {
  const items = unordered.length < 2 ? unordered : [...unordered].sort(byIdempotencyKey);
  const batches = items.map((i) => i.batch);
  const b = <K extends keyof NewBatch>(k: K) => batches.map((r) => r[k]);
  const rows = items.flatMap((i) => i.rows);
  const batchIds = items.flatMap((i) => i.rows.map(() => i.batch.id));
  const c = (k: Exclude<keyof NewCallback, 'runAt'>) => pgArray(rows.map((r) => r[k]));
  const runAt = pgArray(rows.map((r) => r.runAt?.toISOString() ?? null));
  const receiverIds = [...new Set(rows.map((r) => r.receiverId).filter((id) => id !== null))];
  return Prisma.sql`
    WITH b AS (
      INSERT INTO batch (id, api_key_id, label, idempotency_key, request_hash, total, notify_url, notify_host, notify_receiver_id, body_bytes)
      SELECT * FROM unnest(${b('id')}::uuid[], ${b('apiKeyId')}::uuid[], ${b('label')}::text[], ${b('idempotencyKey')}::text[],
                           ${b('requestHash')}::text[], ${b('total')}::int[], ${batches.map((r) => r.notify?.url ?? null)}::text[],
                           ${batches.map((r) => r.notify?.host ?? null)}::text[], ${batches.map((r) => r.notify?.receiverId ?? null)}::uuid[],
                           ${b('bodyBytes')}::bigint[])
      ON CONFLICT (api_key_id, idempotency_key) DO NOTHING
      RETURNING id, api_key_id, created_at
    ), r AS MATERIALIZED (
      SELECT id, disabled, deleted_at IS NOT NULL AS deleted FROM receiver WHERE id = ANY(${receiverIds}::uuid[]) ORDER BY id FOR SHARE
    ), c AS (
      INSERT INTO callback (id, batch_id, api_key_id, external_id, url, host, method, headers, body, timeout_ms,
                            max_attempts, retry_delays_ms, status, next_attempt_at, priority, ordering_key, traceparent, receiver_id, held)
      SELECT u.id, b.id, b.api_key_id, u.external_id, u.url, u.host, u.method, u.headers::jsonb,
             u.body, u.timeout_ms, u.max_attempts, u.retry_delays_ms::int[], ${STATUS.pending},
             ${dueAt(Prisma.sql`COALESCE(u.run_at, now())`, Prisma.sql`COALESCE(r.disabled, false)`)},
             u.priority, u.ordering_key, u.traceparent,
             -- a receiver deleted meanwhile (its row stays until its delete task ends): no such id, so the
             -- foreign key refuses the statement, as it does once the row is gone (BatchService answers 400)
             CASE WHEN r.deleted THEN ${NO_RECEIVER}::uuid ELSE u.receiver_id END, COALESCE(r.disabled, false)
      FROM unnest(${pgArray(batchIds)}::uuid[], ${c('id')}::uuid[], ${c('externalId')}::text[], ${c('url')}::text[],
                  ${c('host')}::text[], ${c('method')}::text[], ${c('headers')}::text[], ${c('body')}::text[],
                  ${c('timeoutMs')}::int[], ${c('maxAttempts')}::int[], ${c('retryDelaysMs')}::text[], ${runAt}::timestamptz[],
                  ${c('priority')}::smallint[], ${c('orderingKey')}::text[], ${c('traceparent')}::text[], ${c('receiverId')}::uuid[])
           AS u(batch_id, id, external_id, url, host, method, headers, body, timeout_ms, max_attempts, retry_delays_ms, run_at,
                priority, ordering_key, traceparent, receiver_id)
      JOIN b ON b.id = u.batch_id
      LEFT JOIN r ON r.id = u.receiver_id
    )
    SELECT id, created_at AS "createdAt" FROM b`;
}

@Injectable()
export class BatchRepository {
  private readonly inserts = new StatementCoalescer<PendingBatch, Date | null>((items) => this.insertBatches(items), {
    maxInFlight: INSERTS_IN_FLIGHT,
    maxWeight: INSERT_MAX_ROWS,
    weight: (item) => item.rows.length,
  });

  /** The primary, where a read goes unless given a replica's reader (ReadReplica). */
  private readonly primary: Reader;

  constructor(
    private readonly prisma: PrismaService,
    private readonly db: ApiDatabase,
    private readonly due: DueNotifier,
  ) {
    this.primary = { prisma, db };
  }

  /**
   * Stores a batch and all its callbacks atomically; resolves once committed (a
   * 202 promises durability, so ingest keeps `synchronous_commit` on). Concurrent
   * batches share one statement and so one commit (see StatementCoalescer): a
   * one-callback batch otherwise pays a whole statement and WAL flush for one row.
   * The workers are woken after the commit by one coalesced NOTIFY.
   */
  async insertBatch(batch: NewBatch, rows: NewCallback[], dueNow: boolean): Promise<InsertResult> {
    const createdAt = await this.inserts.submit({ batch, rows });
    if (!createdAt) {
      const existing = await this.findByIdempotencyKey(batch.apiKeyId, batch.idempotencyKey!);
      if (!existing) throw new Error(`batch ${batch.id} was not inserted, and no batch holds its Idempotency-Key`);
      return { inserted: false, existing };
    }
    if (dueNow) this.due.notifyDue(highestPriority(rows));
    return { inserted: true, createdAt };
  }

  /** Per batch in order, its stored `created_at`, or null where it was not inserted (a duplicate Idempotency-Key). */
  private async insertBatches(items: PendingBatch[]): Promise<(Date | null)[]> {
    const created = await this.db.query<{ id: string; createdAt: Date }>(insertBatchesStatement(items));
    const byId = new Map(created.map((r) => [r.id, r.createdAt]));
    return items.map((i) => byId.get(i.batch.id) ?? null);
  }

  /** The key's pending callbacks, counted up to `atMost`, and the bytes of payload they hold (countPending, in its own transaction: COUNT_PLANNER). */
  async countPending(apiKeyId: string, atMost: number): Promise<{ n: number; bytes: number }> {
    const rows = await this.db.query<{ n: number; bytes: number }>(countPending(apiKeyId, atMost), COUNT_PLANNER);
    return rows[0];
  }

  /** The key's batch stored under this Idempotency-Key, if any. */
  findByIdempotencyKey(apiKeyId: string, idempotencyKey: string): Promise<BatchRow | null> {
    return this.prisma.batch.findFirst({ where: { apiKeyId, idempotencyKey } });
  }

  findBatch(apiKeyId: string, id: string): Promise<BatchRow | null> {
    return this.prisma.batch.findFirst({ where: { id, apiKeyId } });
  }

  /** The key's batches, newest first; on `reader` (a read replica, ReadReplica) or the primary. */
  listBatches(apiKeyId: string, limit: number, before?: string, reader = this.primary): Promise<BatchRow[]> {
    return reader.prisma.batch.findMany({
      where: { apiKeyId, ...(before ? { id: { lt: before } } : {}) },
      orderBy: { id: 'desc' },
      take: limit,
    });
  }

  /** Callback counts by status; served by `callback_batch_id_status_idx`; on `reader` or the primary. */
  async countByStatus(batchIds: string[], reader = this.primary): Promise<Array<{ batchId: string; status: CallbackStatus; n: number }>> {
    if (batchIds.length === 0) return [];
    return reader.db.query(Prisma.sql`
      SELECT batch_id AS "batchId", status, count(*)::int AS n FROM callback
      WHERE batch_id = ANY(${batchIds}::uuid[]) GROUP BY batch_id, status`);
  }

  /** The batch's counts by status with its first attempt start and last attempt end (its makespan on the wire): batchProgress, without JIT. */
  async progress(
    batchId: string,
    createdAt: Date,
  ): Promise<{ counts: Partial<Record<CallbackStatus, number>>; firstStartAt: Date | null; lastEndAt: Date | null }> {
    const [row] = await this.db.query<{ counts: Partial<Record<CallbackStatus, number>>; firstStartAt: Date | null; lastEndAt: Date | null }>(
      batchProgress(batchId, createdAt),
      WITHOUT_JIT,
    );
    return row;
  }

  /** Ids and external ids in request order (ids are time-ordered per batch). */
  callbackIds(batchId: string): Promise<Array<{ id: string; externalId: string | null }>> {
    return this.prisma.callback.findMany({ where: { batchId }, select: { id: true, externalId: true }, orderBy: { id: 'asc' } });
  }
}

/** Batches without a key first, then by key and Idempotency-Key; stable, so replays of one key keep their arrival order. */
function byIdempotencyKey(a: PendingBatch, b: PendingBatch): number {
  const ka = a.batch.idempotencyKey;
  const kb = b.batch.idempotencyKey;
  if (ka === null || kb === null) return ka === kb ? 0 : ka === null ? -1 : 1;
  return a.batch.apiKeyId < b.batch.apiKeyId ? -1 : a.batch.apiKeyId > b.batch.apiKeyId ? 1 : ka < kb ? -1 : ka > kb ? 1 : 0;
}

/** The highest priority (smallest number) of `rows`. */
function highestPriority(rows: NewCallback[]): number {
  let p = Number.POSITIVE_INFINITY;
  for (const r of rows) if (r.priority < p) p = r.priority;
  return p === Number.POSITIVE_INFINITY ? 0 : p;
}
