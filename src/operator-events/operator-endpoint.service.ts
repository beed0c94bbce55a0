import { Injectable } from '@nestjs/common';
import { AppError, notFound } from '../common/app.error.js';
import { uuidv7 } from '../common/uuid.js';
import { destinationOf } from '../common/validators.js';
import { ReceiverRepository, type ReceiverRow } from '../receivers/receiver.repository.js';
import { newSigningSecret } from '../signing/signature.js';
import { SigningSecretService } from '../signing/signing-secret.service.js';
import { TaskRepository } from '../tasks/task.repository.js';
import { TaskRunner } from '../tasks/task.runner.js';
import { toTaskView } from '../tasks/task.view.js';
import type { DeletedOperatorEndpointDto, OperatorEndpointDto, PutOperatorEndpointDto } from './dto/operator-endpoint.dto.js';
import { OperatorEndpointRepository, type OperatorEndpointRow } from './operator-endpoint.repository.js';
import { OPERATOR_RECEIVER, type OperatorEventType } from '../queue/operator-event.sql.js';

/** Its secret must carry at least this many bytes of key (as a receiver's). */
const MIN_SECRET_BYTES = 24;

/**
 * A key's operator endpoint. It is a receiver row of the key named OPERATOR_RECEIVER
 * (no receiver route can name it) plus its operator_endpoint row: so its deliveries
 * are ordinary callbacks of that receiver, signed with its own whsec_ secrets
 * (rotated with the same 24 h overlap), held while it is disabled, counted in its
 * health, and in the history by its destination (a recovery by `host` reaches it). Disabling and enabling run the receiver's task
 * (its held events released in chunks).
 */
@Injectable()
export class OperatorEndpointService {
  constructor(
    private readonly endpoints: OperatorEndpointRepository,
    private readonly receivers: ReceiverRepository,
    private readonly signing: SigningSecretService,
    private readonly tasks: TaskRepository,
    private readonly runner: TaskRunner,
  ) {}

  /** Creates (created: true) or updates it; answers it with its secrets. */
  async putEndpoint(apiKeyId: string, dto: PutOperatorEndpointDto): Promise<{ created: boolean; endpoint: OperatorEndpointDto }> {
    const secret = dto.secret ?? undefined;
    if (secret !== undefined && Buffer.from(secret.slice('whsec_'.length), 'base64').length < MIN_SECRET_BYTES) {
      throw new AppError('validation_failed', `secret must hold at least ${MIN_SECRET_BYTES} bytes (base64 after whsec_)`);
    }
    const eventTypes = dto.eventTypes === undefined ? undefined : dto.eventTypes === null ? null : [...new Set(dto.eventTypes)];
    const disabled = dto.disabled ?? undefined;
    const url = dto.url ?? undefined;
    let row = await this.receivers.findReceiver(apiKeyId, OPERATOR_RECEIVER);
    let created = false;
    if (!row) {
      if (url === undefined) throw new AppError('validation_failed', 'url is required: the key has no operator endpoint yet');
      row = await this.receivers.insertReceiver(
        { id: uuidv7(), apiKeyId, name: OPERATOR_RECEIVER, disabled: disabled ?? false, url },
        this.signing.sealNew(secret ?? newSigningSecret()),
      );
      created = row !== null;
    }
    if (!created) {
      const updated = await this.receivers.updateReceiver(apiKeyId, OPERATOR_RECEIVER, { url, disabled });
      if (!updated) throw new AppError('conflict', 'the operator endpoint was deleted while being updated; try again');
      if (updated.taskId) await this.runner.start(updated.taskId);
      row = updated.row;
      if (secret !== undefined) {
        const current = await this.signing.secretsOfReceiver(row.id);
        if (current[0]?.secret !== secret) await this.signing.rotateReceiver(apiKeyId, row.id, secret);
      }
    }
    const endpoint = await this.endpoints.upsertEndpoint(apiKeyId, row!.id, destinationOf(row!.url!), eventTypes);
    return { created, endpoint: await this.view(row!, endpoint) };
  }

  async getEndpoint(apiKeyId: string): Promise<OperatorEndpointDto> {
    const { row, endpoint } = await this.require(apiKeyId);
    return this.view(row, endpoint);
  }

  /** A new secret; the old one keeps signing beside it for 24 h. */
  async rotateSecret(apiKeyId: string): Promise<OperatorEndpointDto> {
    const { row, endpoint } = await this.require(apiKeyId);
    await this.signing.rotateReceiver(apiKeyId, row.id);
    return this.view(row, endpoint);
  }

  /** Stops its events at once; those not yet delivered are cancelled (by the receiver delete task). */
  async deleteEndpoint(apiKeyId: string): Promise<DeletedOperatorEndpointDto> {
    if (!(await this.endpoints.deleteEndpoint(apiKeyId))) throw notFound('operator endpoint');
    const deleted = await this.receivers.deleteReceiver(apiKeyId, OPERATOR_RECEIVER);
    if (!deleted) return { deleted: true, cancelledCallbacks: 0 };
    const run = await this.runner.start(deleted.taskId);
    return { deleted: true, cancelledCallbacks: run.done };
  }

  private async require(apiKeyId: string): Promise<{ row: ReceiverRow; endpoint: OperatorEndpointRow }> {
    const [endpoint, row] = await Promise.all([this.endpoints.findEndpoint(apiKeyId), this.receivers.findReceiver(apiKeyId, OPERATOR_RECEIVER)]);
    if (!endpoint || !row || row.id !== endpoint.receiverId) throw notFound('operator endpoint');
    return { row, endpoint };
  }

  private async view(row: ReceiverRow, endpoint: OperatorEndpointRow): Promise<OperatorEndpointDto> {
    const [secrets, task] = await Promise.all([this.signing.secretsOfReceiver(row.id), this.tasks.runningTaskOfReceiver(row.id)]);
    return {
      url: row.url!,
      eventTypes: endpoint.eventTypes as OperatorEventType[] | null,
      disabled: row.disabled,
      disabledReason: row.disabledReason,
      failingSince: row.failingSince?.toISOString() ?? null,
      secrets,
      task: task ? toTaskView(task) : null,
      createdAt: endpoint.createdAt.toISOString(),
      updatedAt: endpoint.updatedAt.toISOString(),
    };
  }
}
