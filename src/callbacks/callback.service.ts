import { Injectable } from '@nestjs/common';
import { AppError, notFound } from '../common/app.error.js';
import { CallbackRepository, type AttemptRow, type CallbackFilter, type CallbackWithAttempts } from './callback.repository.js';
import type { CallbackStatus } from '../common/states.js';

type CallbackRow = CallbackWithAttempts;

@Injectable()
export class CallbackService {
  constructor(private readonly callbacks: CallbackRepository) {}

  async getCallback(apiKeyId: string, id: string) {
    const row = await this.callbacks.findCallback(apiKeyId, id);
    if (!row) throw notFound('callback');
    return { ...toCallbackView(row), attempts: row.attemptRows.map(toAttemptView) };
  }

  async listCallbacks(apiKeyId: string, filter: CallbackFilter) {
    const rows = await this.callbacks.listCallbacks(apiKeyId, filter);
    return {
      items: rows.map(toCallbackView),
      nextCursor: rows.length === filter.limit ? rows[rows.length - 1].id : null,
    };
  }

  async cancelCallback(apiKeyId: string, id: string) {
    const done = await this.callbacks.cancelCallbacks(apiKeyId, [id]);
    if (done.length === 0) await this.explainNoChange(apiKeyId, id, 'cancelled', ['pending', 'in_flight']);
    return this.getCallback(apiKeyId, id);
  }

  async retryCallback(apiKeyId: string, id: string) {
    const n = await this.callbacks.retryCallbacks(apiKeyId, { ids: [id] }, ['failed', 'cancelled']);
    if (n === 0) await this.explainNoChange(apiKeyId, id, 'retried', ['failed', 'cancelled']);
    return this.getCallback(apiKeyId, id);
  }

  async retryBatch(apiKeyId: string, batchId: string, statuses: CallbackStatus[]) {
    return { batchId, retried: await this.callbacks.retryCallbacks(apiKeyId, { batchId }, statuses) };
  }

  private async explainNoChange(apiKeyId: string, id: string, verb: string, from: CallbackStatus[]): Promise<never> {
    const row = await this.callbacks.statusOf(apiKeyId, id);
    if (!row) throw notFound('callback');
    throw new AppError('conflict', `a ${row.status} callback cannot be ${verb} (only ${from.join(' or ')})`, { status: row.status });
  }
}

export function toCallbackView(c: Omit<CallbackRow, 'attemptRows'>) {
  return {
    id: c.id,
    batchId: c.batchId,
    externalId: c.externalId,
    url: c.url,
    host: c.host,
    method: c.method,
    status: c.status as CallbackStatus,
    attemptCount: c.attempts,
    maxAttempts: c.maxAttempts,
    timeoutMs: c.timeoutMs,
    // A held callback waits for its receiver, not for a time (its stored due time is moved out: receiver-hold.sql.ts).
    nextAttemptAt: c.status === 'pending' && !c.held ? c.nextAttemptAt.toISOString() : null,
    lastStatusCode: c.lastStatusCode,
    lastError: c.lastError,
    receiver: c.receiver?.name ?? null,
    /** Why a pending callback is not being sent now (null: nothing holds it). */
    waiting: waitingOf(c),
    createdAt: c.createdAt.toISOString(),
    completedAt: c.completedAt?.toISOString() ?? null,
  };
}

/** `{reason, detail?}` when something holds a pending callback back. */
function waitingOf(c: Pick<CallbackRow, 'status' | 'held' | 'receiver'>): { reason: string; detail?: string } | null {
  if (c.status !== 'pending' || !c.held) return null;
  return { reason: 'receiver_disabled', ...(c.receiver?.disabledReason && { detail: `receiver ${c.receiver.name}: ${c.receiver.disabledReason}` }) };
}

export function toAttemptView(a: AttemptRow) {
  return {
    number: a.number,
    startedAt: new Date(a.startedAt).toISOString(), // the API's one time format (milliseconds, Z)
    durationMs: a.durationMs,
    statusCode: a.statusCode,
    outcome: a.outcome,
    error: a.error,
    phases: { dnsMs: a.dnsMs, connectMs: a.connectMs, tlsMs: a.tlsMs, firstByteMs: a.firstByteMs },
    responseHeaders: a.responseHeaders,
    responseBody: a.responseBody,
  };
}
