import { Injectable } from '@nestjs/common';
import { AppError, notFound } from '../common/app.error.js';
import { pageOf } from '../common/page.js';
import { ReadReplica } from '../database/read-replica.js';
import type { BatchRetryDto } from './dto/batch-retry.dto.js';
import { uuidv7 } from '../common/uuid.js';
import { TaskRepository } from '../tasks/task.repository.js';
import { TaskRunner } from '../tasks/task.runner.js';
import { toTaskView } from '../tasks/task.view.js';
import { CallbackRepository, type AttemptRow, type CallbackFilter, type CallbackWithAttempts } from './callback.repository.js';
import { PRIORITIES, type CallbackStatus, type Priority } from '../model/states.js';
import { waitingReason, type Waiting } from './callback.policy.js';
import type { AttemptDto, CallbackDetailDto, CallbackDto, CallbackPageDto } from './dto/callback.dto.js';

type CallbackRow = CallbackWithAttempts;

@Injectable()
export class CallbackService {
  constructor(
    private readonly callbacks: CallbackRepository,
    private readonly tasks: TaskRepository,
    private readonly runner: TaskRunner,
    private readonly reads: ReadReplica,
  ) {}

  async getCallback(apiKeyId: string, id: string): Promise<CallbackDetailDto> {
    const row = await this.callbacks.findCallback(apiKeyId, id);
    if (!row) throw notFound('callback');
    const view = { ...toCallbackView(row), attempts: row.attemptRows.map(toAttemptView) };
    if (row.status !== 'pending' || view.waiting) return view;
    // Pending, not held: what else it waits for takes a read of its host and ordering key.
    const state = await this.callbacks.waitingState(apiKeyId, id);
    return state ? { ...view, waiting: waitingReason(state) } : view;
  }

  /** A page of the key's callbacks, on the replica when it serves the key (ReadReplica). */
  async listCallbacks(apiKeyId: string, filter: CallbackFilter): Promise<CallbackPageDto> {
    const read = await this.reads.read(apiKeyId, (reader) => this.callbacks.listCallbacks(apiKeyId, { ...filter, limit: filter.limit + 1 }, reader));
    const { rows, nextCursor } = pageOf(read, filter.limit, (r) => r.id);
    return { items: rows.map(toCallbackView), nextCursor };
  }

  /** The batch holding the deliveries of the key's event `eventId`, else 404. */
  async batchOfEvent(apiKeyId: string, eventId: string): Promise<string> {
    const batchId = await this.callbacks.eventBatchId(apiKeyId, eventId);
    if (!batchId) throw notFound('event');
    return batchId;
  }

  async cancelCallback(apiKeyId: string, id: string): Promise<CallbackDetailDto> {
    const done = await this.callbacks.cancelCallbacks(apiKeyId, [id]);
    if (done.length === 0) await this.explainNoChange(apiKeyId, id, 'cancelled', ['pending', 'in_flight']);
    return this.getCallback(apiKeyId, id);
  }

  async retryCallback(apiKeyId: string, id: string): Promise<CallbackDetailDto> {
    const n = await this.callbacks.retryCallbacks(apiKeyId, [id], ['failed', 'cancelled']);
    if (n === 0) await this.explainNoChange(apiKeyId, id, 'retried', ['failed', 'cancelled']);
    return this.getCallback(apiKeyId, id);
  }

  /**
   * Sends the batch's callbacks in `statuses` again, as a `batch.retry` task (up to
   * 100,000 rows: in chunks, each its own transaction); what fits in TASK_INLINE_MS
   * is done before the answer (`task` null when all is).
   */
  async retryBatch(apiKeyId: string, batchId: string, statuses: CallbackStatus[]): Promise<BatchRetryDto> {
    const taskId = uuidv7();
    await this.tasks.createTask({ id: taskId, apiKeyId, kind: 'batch.retry', batchId, statuses });
    const run = await this.runner.start(taskId);
    const task = run.finished ? undefined : await this.tasks.findTask(apiKeyId, taskId);
    return { batchId, retried: run.done, task: task ? toTaskView(task) : null };
  }

  private async explainNoChange(apiKeyId: string, id: string, verb: string, from: CallbackStatus[]): Promise<never> {
    const row = await this.callbacks.statusOf(apiKeyId, id);
    if (!row) throw notFound('callback');
    throw new AppError('conflict', `the callback is ${row.status}: it cannot be ${verb} (only when ${from.join(' or ')})`, { status: row.status });
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
      ...(a.tokenMs !== null && a.tokenMs !== undefined && { tokenMs: a.tokenMs }),
    },
    auth: a.auth ?? null,
    responseHeaders: a.responseHeaders,
    responseBody: a.responseBody,
    transformed: (a.transformed as AttemptDto['transformed'] | undefined) ?? null,
  };
}
