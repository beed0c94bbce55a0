import { Injectable, Logger } from '@nestjs/common';
import { AppError, notFound } from '../common/app.error.js';
import { destinationParam } from '../common/params.js';
import { PRIORITIES, priorityRank, type Recoverable, type RecoveryState, type TaskStatus } from '../model/states.js';
import { uuidv7 } from '../common/uuid.js';
import { ReceiverService } from '../receivers/receiver.service.js';
import { TaskRunner } from '../tasks/task.runner.js';
import type { CreateRecoveryDto, RecoveryDto, RecoveryPreviewDto } from './dto/recovery.dto.js';
import { recoveryWindow } from './recovery.policy.js';
import { RecoveryRepository, type RecoveryRow } from './recovery.repository.js';
import type { RecoveryFilter } from './recovery.sql.js';

const STATE_OF: Record<TaskStatus, RecoveryState> = { running: 'running', finished: 'done', cancelled: 'cancelled', superseded: 'cancelled' };

/**
 * Recoveries: a bulk replay of a key's failed (or cancelled) callbacks as a task
 * (kind recovery, recovery.sql.ts), so the request answers at once and the work
 * goes on in chunks, resumed by the maintenance leader if its process dies.
 */
@Injectable()
export class RecoveryService {
  private readonly logger = new Logger(RecoveryService.name);

  constructor(
    private readonly recoveries: RecoveryRepository,
    private readonly receivers: ReceiverService,
    private readonly runner: TaskRunner,
  ) {}

  async previewRecovery(apiKeyId: string, dto: CreateRecoveryDto): Promise<RecoveryPreviewDto> {
    const { filter, statuses } = await this.filterOf(apiKeyId, dto);
    return { matched: await this.recoveries.countMatching(filter, statuses) };
  }

  /** Counts what matches, stores the recovery with its task, and runs its first chunks before answering (TaskRunner.start). */
  async startRecovery(apiKeyId: string, dto: CreateRecoveryDto): Promise<RecoveryDto> {
    const { filter, statuses } = await this.filterOf(apiKeyId, dto);
    const matched = await this.recoveries.countMatching(filter, statuses);
    const id = uuidv7();
    await this.recoveries.insertRecovery(id, filter, statuses, matched);
    this.logger.log({ msg: `recovery ${id}: ${matched} callbacks to send again`, event: 'recovery_started', recoveryId: id, matched });
    await this.runner.start(id);
    return this.getRecovery(apiKeyId, id);
  }

  async getRecovery(apiKeyId: string, id: string): Promise<RecoveryDto> {
    const row = await this.recoveries.findRecovery(apiKeyId, id);
    if (!row) throw notFound('recovery');
    return toRecoveryView(row, await this.recoveries.progress(id));
  }

  async cancelRecovery(apiKeyId: string, id: string): Promise<RecoveryDto> {
    if (!(await this.recoveries.cancelRecovery(apiKeyId, id))) {
      const row = await this.recoveries.findRecovery(apiKeyId, id);
      if (!row) throw notFound('recovery');
      const state = STATE_OF[row.taskStatus];
      throw new AppError('conflict', `a ${state} recovery cannot be cancelled (only a running one)`, { state });
    }
    return this.getRecovery(apiKeyId, id);
  }

  /** The body as a filter, each name looked up in the key's own (a 400 naming what is unknown or wrong). */
  private async filterOf(apiKeyId: string, dto: CreateRecoveryDto): Promise<{ filter: RecoveryFilter; statuses: Recoverable[] }> {
    const host = dto.host === undefined ? null : destinationParam('host', dto.host);
    const receiverId = dto.receiver === undefined ? null : (await this.receivers.resolve(apiKeyId, [dto.receiver])).get(dto.receiver)!.id;
    let batchId = dto.batch?.toLowerCase() ?? null;
    if (batchId !== null && !(await this.recoveries.batchExists(apiKeyId, batchId))) {
      throw new AppError('validation_failed', `batch ${batchId} is not a batch of your key`);
    }
    if (dto.event !== undefined) {
      const ofEvent = await this.recoveries.batchOfEvent(apiKeyId, dto.event);
      if (!ofEvent) throw new AppError('validation_failed', `event ${dto.event} is not an event of your key`);
      if (batchId !== null && batchId !== ofEvent) throw new AppError('validation_failed', `event ${dto.event} is not of batch ${batchId}`);
      batchId = ofEvent;
    }
    const scoped = receiverId !== null || host !== null || batchId !== null;
    const { since, until } = recoveryWindow({ since: dto.since, until: dto.until, scoped, now: new Date() });
    const statuses = [...new Set(dto.status ?? ['failed'])] as Recoverable[];
    const priority = priorityRank(dto.priority ?? 'low');
    return { filter: { apiKeyId, receiverId, host, batchId, since, until, priority }, statuses };
  }
}

function toRecoveryView(r: RecoveryRow, now: Map<string, number>): RecoveryDto {
  const n = (s: string) => now.get(s) ?? 0;
  return {
    id: r.id,
    state: STATE_OF[r.taskStatus],
    receiver: r.receiverName,
    host: r.host,
    batchId: r.batchId,
    status: r.statuses,
    since: r.since?.toISOString() ?? null,
    until: r.until.toISOString(),
    priority: PRIORITIES[r.priority],
    matched: r.matched,
    requeued: r.requeued,
    pending: n('pending') + n('in_flight'),
    delivered: n('succeeded'),
    failed: n('failed'),
    cancelled: n('cancelled'),
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
    finishedAt: r.finishedAt?.toISOString() ?? null,
  };
}
