import { Injectable } from '@nestjs/common';
import { AppError, notFound } from '../common/app.error.js';
import { CallbackRepository, type AttemptRow, type CallbackFilter, type CallbackWithAttempts } from './callback.repository.js';
import { PRIORITIES, type CallbackStatus, type Priority } from '../common/states.js';
import { waitingReason, type Waiting } from './callback.policy.js';
import type { AttemptDto, CallbackDetailDto, CallbackDto, CallbackPageDto } from './dto/callback.dto.js';

type CallbackRow = CallbackWithAttempts;

@Injectable()
export class CallbackService {
  constructor(private readonly callbacks: CallbackRepository) {}

  async getCallback(apiKeyId: string, id: string): Promise<CallbackDetailDto> {
    const row = await this.callbacks.findCallback(apiKeyId, id);
    if (!row) throw notFound('callback');
    const view = { ...toCallbackView(row), attempts: row.attemptRows.map(toAttemptView) };
    if (row.status !== 'pending' || view.waiting) return view;
    // Pending, not held: what else it waits for takes a read of its host and ordering key.
    const state = await this.callbacks.waitingState(apiKeyId, id);
    return state ? { ...view, waiting: waitingReason(state) } : view;
  }

  async listCallbacks(apiKeyId: string, filter: CallbackFilter): Promise<CallbackPageDto> {
    const rows = await this.callbacks.listCallbacks(apiKeyId, filter);
    return {
      items: rows.map(toCallbackView),
      nextCursor: rows.length === filter.limit ? rows[rows.length - 1].id : null,
    };
  }

  async cancelCallback(apiKeyId: string, id: string): Promise<CallbackDetailDto> {
    const done = await this.callbacks.cancelCallbacks(apiKeyId, [id]);
    if (done.length === 0) await this.explainNoChange(apiKeyId, id, 'cancelled', ['pending', 'in_flight']);
    return this.getCallback(apiKeyId, id);
  }

  async retryCallback(apiKeyId: string, id: string): Promise<CallbackDetailDto> {
    const n = await this.callbacks.retryCallbacks(apiKeyId, { ids: [id] }, ['failed', 'cancelled']);
    if (n === 0) await this.explainNoChange(apiKeyId, id, 'retried', ['failed', 'cancelled']);
    return this.getCallback(apiKeyId, id);
  }

  async retryBatch(apiKeyId: string, batchId: string, statuses: CallbackStatus[]): Promise<{ batchId: string; retried: number }> {
    return { batchId, retried: await this.callbacks.retryCallbacks(apiKeyId, { batchId }, statuses) };
  }

  private async explainNoChange(apiKeyId: string, id: string, verb: string, from: CallbackStatus[]): Promise<never> {
    const row = await this.callbacks.statusOf(apiKeyId, id);
    if (!row) throw notFound('callback');
    throw new AppError('conflict', `a ${row.status} callback cannot be ${verb} (only ${from.join(' or ')})`, { status: row.status });
  }
}

export function toCallbackView(c: Omit<CallbackRow, 'attemptRows'>): CallbackDto {
  return {
    id: c.id,
    batchId: c.batchId,
    externalId: c.externalId,
    url: c.url,
    host: c.host,
    method: c.method,
    status: c.status as CallbackStatus,
    attemptCount: c.attempts,
    priority: PRIORITIES[c.priority] as Priority,
    orderingKey: c.orderingKey,
    maxAttempts: c.maxAttempts,
    timeoutMs: c.timeoutMs,
    // A held callback waits for its receiver, not for a time (its stored due time is moved out: receiver-hold.sql.ts).
    nextAttemptAt: c.status === 'pending' && !c.held ? c.nextAttemptAt.toISOString() : null,
    lastStatusCode: c.lastStatusCode,
    lastError: c.lastError,
    receiver: c.receiver?.name ?? null,
    waiting: waitingOf(c),
    createdAt: c.createdAt.toISOString(),
    completedAt: c.completedAt?.toISOString() ?? null,
  };
}

/** Held by its receiver (disabled): known from the row itself, so lists show it too. */
function waitingOf(c: Pick<CallbackRow, 'status' | 'held' | 'receiver'>): Waiting | null {
  if (c.status !== 'pending' || !c.held) return null;
  const detail = c.receiver?.disabledReason
    ? `receiver ${c.receiver.name}: ${c.receiver.disabledReason}`
    : `receiver ${c.receiver?.name ?? '(deleted)'} is disabled`;
  return { reason: 'receiver_disabled', detail };
}

export function toAttemptView(a: AttemptRow): AttemptDto {
  return {
    number: a.number,
    startedAt: new Date(a.startedAt).toISOString(), // the API's one time format (milliseconds, Z)
    durationMs: a.durationMs,
    statusCode: a.statusCode,
    outcome: a.outcome,
    error: a.error,
    // tunnelMs only on attempts that opened a tunnel through EGRESS_PROXY_URL (connectMs is then the proxy's).
    phases: {
      dnsMs: a.dnsMs,
      connectMs: a.connectMs,
      tlsMs: a.tlsMs,
      firstByteMs: a.firstByteMs,
      ...(a.tunnelMs !== null && a.tunnelMs !== undefined && { tunnelMs: a.tunnelMs }),
    },
    responseHeaders: a.responseHeaders,
    responseBody: a.responseBody,
  };
}
