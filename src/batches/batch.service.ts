import { Injectable, Logger } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { CALLBACK_STATUSES, priorityRank, type CallbackStatus } from '../model/states.js';
import { AppConfig } from '../config/app.config.js';
import { AppError, notFound } from '../common/app.error.js';
import { pageOf } from '../common/page.js';
import { CALLBACK_RECEIVER_FKEY, isForeignKeyViolation } from '../database/database.errors.js';
import { ReadReplica, type Reader } from '../database/read-replica.js';
import { layerHeaders } from '../common/headers.js';
import { uuidv7 } from '../common/uuid.js';
import { destinationOf, jsonDepth, MAX_HEADERS } from '../common/validators.js';
import { ReceiverService } from '../receivers/receiver.service.js';
import type { ReceiverRow } from '../receivers/receiver.repository.js';
import { SigningSecretService } from '../signing/signing-secret.service.js';
import { BatchRepository, type BatchRow, type NewBatch, type NewCallback } from './batch.repository.js';
import { PendingQuota } from './pending-quota.service.js';
import type { BatchDto, BatchPageDto, BatchStatus, BatchSummaryDto } from './dto/batch.dto.js';
import type { CallbackInputDto, CreateBatchDto } from './dto/create-batch.dto.js';

export interface AcceptedBatch {
  id: string;
  label: string | null;
  status: 'pending';
  total: number;
  createdAt: string;
  callbacks: Array<{ id: string; externalId: string | null }>;
  /** True when an Idempotency-Key replay returned the batch stored earlier. */
  replayed: boolean;
}

export type Counts = Record<CallbackStatus, number>;

@Injectable()
export class BatchService {
  private readonly logger = new Logger(BatchService.name);

  constructor(
    private readonly batches: BatchRepository,
    private readonly config: AppConfig,
    private readonly receivers: ReceiverService,
    private readonly signing: SigningSecretService,
    private readonly quota: PendingQuota,
    private readonly reads: ReadReplica,
  ) {}

  /** Validates limits, stores the batch and its callbacks atomically, and wakes the workers. */
  async acceptBatch(apiKeyId: string, dto: CreateBatchDto, idempotencyKey?: string, traceparent: string | null = null): Promise<AcceptedBatch> {
    if (dto.callbacks.length > this.config.maxCallbacksPerBatch) {
      throw new AppError('payload_too_large', `a batch holds at most ${this.config.maxCallbacksPerBatch} callbacks (got ${dto.callbacks.length})`);
    }
    if (idempotencyKey !== undefined && (idempotencyKey.length < 1 || idempotencyKey.length > 255)) {
      throw new AppError('validation_failed', 'Idempotency-Key must be 1 to 255 characters');
    }
    const now = Date.now();
    const receivers = await this.receivers.resolve(apiKeyId, receiverNames(dto));
    const rows = dto.callbacks.map((c, i) => this.toRow(c, dto, i, receivers, traceparent));
    const notify = notifyOf(dto, receivers);
    let bytes = 0;
    for (const r of rows) if (r.body !== null) bytes += Buffer.byteLength(r.body);
    const batch = {
      id: uuidv7(),
      apiKeyId,
      label: dto.label?.toWellFormed() ?? null,
      idempotencyKey: idempotencyKey ?? null,
      requestHash: idempotencyKey ? createHash('sha256').update(JSON.stringify(dto)).digest('hex') : null,
      total: rows.length,
      notify,
      bodyBytes: bytes,
    };
    const dueNow = rows.some((r) => !r.runAt || r.runAt.getTime() <= now);
    try {
      await this.quota.admit(apiKeyId, rows.length, bytes);
    } catch (error) {
      // A replay of a batch stored before the key reached its quota answers as a replay.
      if (!(error instanceof AppError && error.code === 'quota_exceeded') || idempotencyKey === undefined) throw error;
      const existing = await this.batches.findByIdempotencyKey(apiKeyId, idempotencyKey);
      if (existing) return this.replay(existing, batch.requestHash!);
      throw error;
    }
    // Destinations are given their secret before the batch is stored, so the worker never writes one.
    const destinations = destinationsWithoutReceiver(rows);
    if (notify && !notify.receiverId) destinations.add(notify.host);
    await this.signing.ensureDestinationSecrets(apiKeyId, destinations);
    const result = await this.batches.insertBatch(batch, rows, dueNow).catch((error: unknown) => {
      this.quota.notStored(apiKeyId, rows.length, bytes);
      // A receiver deleted between the name lookup and the insert (the insert reads it FOR SHARE, so only then).
      if (!isForeignKeyViolation(error, CALLBACK_RECEIVER_FKEY)) throw error;
      throw new AppError('validation_failed', 'a receiver this batch names was deleted while the batch was being stored; nothing was stored');
    });
    if (!result.inserted) {
      this.quota.notStored(apiKeyId, rows.length, bytes);
      return this.replay(result.existing, batch.requestHash!);
    }
    this.logger.log({
      msg: `batch ${batch.id} accepted: ${rows.length} callbacks`,
      event: 'batch_accepted',
      batchId: batch.id,
      callbacks: rows.length,
      label: batch.label ?? null,
    });
    return {
      id: batch.id,
      label: batch.label,
      status: 'pending',
      total: rows.length,
      createdAt: result.createdAt.toISOString(),
      callbacks: rows.map((r) => ({ id: r.id, externalId: r.externalId })),
      replayed: false,
    };
  }

  private async replay(existing: BatchRow, requestHash: string): Promise<AcceptedBatch> {
    if (existing.requestHash !== requestHash) {
      throw new AppError('idempotency_conflict', 'this Idempotency-Key was used with a different request body', { batchId: existing.id });
    }
    return {
      id: existing.id,
      label: existing.label,
      status: 'pending',
      total: existing.total,
      createdAt: existing.createdAt.toISOString(),
      callbacks: await this.batches.callbackIds(existing.id),
      replayed: true,
    };
  }

  /** One callback's row; settings resolve callback > batch defaults > receiver > configuration. */
  private toRow(c: CallbackInputDto, dto: CreateBatchDto, index: number, receivers: ReadonlyMap<string, ReceiverRow>, traceparent: string | null): NewCallback {
    const d = dto.defaults ?? {};
    const name = c.receiver ?? d.receiver;
    const r = name === undefined ? undefined : receivers.get(name)!;
    const url = c.url ?? r?.url;
    if (!url) {
      throw new AppError(
        'validation_failed',
        r ? `callbacks[${index}].url is required: receiver ${r.name} has no url` : `callbacks[${index}].url is required (or a receiver with a url)`,
      );
    }
    const timeoutMs = c.timeoutMs ?? d.timeoutMs ?? r?.timeoutMs ?? this.config.httpTimeoutMs;
    if (timeoutMs > this.config.httpMaxTimeoutMs) {
      throw new AppError('validation_failed', `callbacks[${index}].timeoutMs must be at most ${this.config.httpMaxTimeoutMs}`);
    }
    const headers = layerHeaders(r?.headers as Record<string, string> | undefined, d.headers, c.headers);
    if (Object.keys(headers).length > MAX_HEADERS) {
      throw new AppError('validation_failed', `callbacks[${index}] has more than ${MAX_HEADERS} headers with the batch defaults`);
    }
    let body: string | null = null;
    if (typeof c.body === 'string') {
      // Postgres text cannot hold NUL; a JSON body keeps it escaped (\u0000) and is fine.
      if (c.body.includes('\u0000')) throw new AppError('validation_failed', `callbacks[${index}].body: a string body must not contain NUL characters`);
      body = c.body.toWellFormed();
    } else if (c.body !== undefined && c.body !== null) {
      if (jsonDepth(c.body, this.config.maxJsonDepth) > this.config.maxJsonDepth) {
        throw new AppError('validation_failed', `callbacks[${index}].body is nested deeper than ${this.config.maxJsonDepth} levels`);
      }
      body = JSON.stringify(c.body);
      if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
    }
    if (body !== null && Buffer.byteLength(body) > this.config.maxCallbackBodyBytes) {
      throw new AppError('payload_too_large', `callbacks[${index}].body is larger than ${this.config.maxCallbackBodyBytes} bytes`);
    }
    const delays = c.retryDelaysMs ?? d.retryDelaysMs ?? (r?.retryDelaysMs.length ? r.retryDelaysMs : undefined);
    return {
      id: uuidv7(),
      // Lone surrogates become U+FFFD here, as storing them as UTF-8 would make of them, so the answer shows what is stored.
      externalId: c.externalId?.toWellFormed() ?? null,
      url: url.toWellFormed(),
      host: destinationOf(url),
      method: c.method ?? d.method ?? 'POST',
      headers: JSON.stringify(headers),
      body,
      timeoutMs,
      maxAttempts: c.maxAttempts ?? d.maxAttempts ?? r?.maxAttempts ?? this.config.defaultMaxAttempts,
      retryDelaysMs: delays ? `{${delays.join(',')}}` : null,
      runAt: c.runAt ? new Date(c.runAt) : null,
      priority: priorityRank(c.priority ?? d.priority ?? 'normal'),
      orderingKey: c.orderingKey?.toWellFormed() ?? null,
      traceparent,
      receiverId: r?.id ?? null,
    };
  }

  /** The batch if it is this key's, else 404 (someone else's batch does not exist for you). */
  async requireBatch(apiKeyId: string, id: string): Promise<BatchRow> {
    const batch = await this.batches.findBatch(apiKeyId, id);
    if (!batch) throw notFound('batch');
    return batch;
  }

  async getBatch(apiKeyId: string, id: string): Promise<BatchDto> {
    const batch = await this.requireBatch(apiKeyId, id);
    const progress = await this.batches.progress(id, batch.createdAt);
    return {
      ...toBatchView(batch, { ...zeroCounts(), ...progress.counts }),
      firstAttemptAt: progress.firstStartAt?.toISOString() ?? null,
      lastAttemptEndAt: progress.lastEndAt?.toISOString() ?? null,
      makespanMs: progress.firstStartAt && progress.lastEndAt ? progress.lastEndAt.getTime() - progress.firstStartAt.getTime() : null,
    };
  }

  /** A page of the key's batches with their counts, both read on the replica when it serves the key (ReadReplica). */
  listBatches(apiKeyId: string, limit: number, cursor?: string): Promise<BatchPageDto> {
    return this.reads.read(apiKeyId, async (reader) => {
      const { rows, nextCursor } = pageOf(await this.batches.listBatches(apiKeyId, limit + 1, cursor, reader), limit, (r) => r.id);
      const counts = await this.countsOf(
        rows.map((r) => r.id),
        reader,
      );
      return { items: rows.map((b) => toBatchView(b, counts.get(b.id)!)), nextCursor };
    });
  }

  private async countsOf(batchIds: string[], reader?: Reader): Promise<Map<string, Counts>> {
    const map = new Map<string, Counts>();
    for (const id of batchIds) map.set(id, zeroCounts());
    for (const r of await this.batches.countByStatus(batchIds, reader)) map.get(r.batchId)![r.status] = r.n;
    return map;
  }
}

/** The batch's `notify` target, resolved as its callbacks' receivers are (when the batch is stored); a 400 unless exactly one of url and receiver (with a url). */
function notifyOf(dto: CreateBatchDto, receivers: ReadonlyMap<string, ReceiverRow>): NewBatch['notify'] {
  const n = dto.notify;
  if (!n) return null;
  if ((n.url === undefined) === (n.receiver === undefined)) throw new AppError('validation_failed', 'notify takes exactly one of url and receiver');
  if (n.url !== undefined) return { url: n.url, host: destinationOf(n.url), receiverId: null };
  const r = receivers.get(n.receiver!)!;
  if (!r.url) throw new AppError('validation_failed', `notify.receiver: receiver ${r.name} has no url`);
  return { url: r.url, host: destinationOf(r.url), receiverId: r.id };
}

/** The receiver names a batch uses (its callbacks', its defaults' and its notify's). */
function receiverNames(dto: CreateBatchDto): Set<string> {
  const names = new Set<string>();
  if (dto.notify?.receiver !== undefined) names.add(dto.notify.receiver);
  if (dto.defaults?.receiver !== undefined) names.add(dto.defaults.receiver);
  for (const c of dto.callbacks) if (c.receiver !== undefined) names.add(c.receiver);
  return names;
}

function destinationsWithoutReceiver(rows: readonly NewCallback[]): Set<string> {
  const hosts = new Set<string>();
  for (const r of rows) if (r.receiverId === null) hosts.add(r.host);
  return hosts;
}

function zeroCounts(): Counts {
  return Object.fromEntries(CALLBACK_STATUSES.map((s) => [s, 0])) as Counts;
}

export function batchStatus(counts: Counts, completedAt: Date | null): BatchStatus {
  const open = counts.pending + counts.in_flight;
  if (open === 0 || completedAt) return 'completed';
  const started = counts.in_flight + counts.succeeded + counts.failed + counts.cancelled;
  return started === 0 ? 'pending' : 'running';
}

function toBatchView(b: BatchRow, counts: Counts): BatchSummaryDto {
  return {
    id: b.id,
    label: b.label,
    status: batchStatus(counts, b.completedAt),
    total: b.total,
    counts,
    createdAt: b.createdAt.toISOString(),
    completedAt: b.completedAt?.toISOString() ?? null,
  };
}
