import { ApiProperty } from '@nestjs/swagger';
import { TASK_KINDS, TASK_STATUSES, type TaskKind, type TaskStatus } from '../../model/states.js';

/**
 * Work on many callbacks at once (a receiver disabled, enabled or deleted, a batch
 * retried, a recovery), done in chunks in the background: `GET /v1/tasks/{id}` follows it.
 */
export class TaskDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ enum: TASK_KINDS }) kind: TaskKind;
  @ApiProperty({
    enum: TASK_STATUSES,
    description: 'superseded: a later disable, enable or delete of the same receiver took over; cancelled: a recovery stopped',
  })
  status: TaskStatus;
  @ApiProperty({ type: String, nullable: true, description: 'the receiver it works on (null once deleted)' }) receiver: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'uuid' }) batchId: string | null;
  @ApiProperty({ description: 'callbacks changed so far (held, released, cancelled or sent again)' }) done: number;
  @ApiProperty() createdAt: string;
  @ApiProperty({ description: 'when its last chunk committed' }) updatedAt: string;
  @ApiProperty({ type: String, nullable: true }) finishedAt: string | null;
}
