import { ApiProperty } from '@nestjs/swagger';
import { SecretDto } from '../../signing/dto/secrets.dto.js';
import { TaskDto } from '../../tasks/dto/task.dto.js';

/** A receiver's settings, as the list shows them. */
export class ReceiverDto {
  @ApiProperty({ example: 'merchant-42' }) name: string;
  @ApiProperty({ type: String, nullable: true }) url: string | null;
  @ApiProperty({ type: String, nullable: true }) description: string | null;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } }) headers: Record<string, string>;
  @ApiProperty({ type: Number, nullable: true }) timeoutMs: number | null;
  @ApiProperty({ type: Number, nullable: true }) maxAttempts: number | null;
  @ApiProperty({ type: [Number], description: "empty: the batch's or the service's schedule" }) retryDelaysMs: number[];
  @ApiProperty({ description: 'its callbacks are held while true' }) disabled: boolean;
  @ApiProperty({ type: String, nullable: true }) disabledReason: string | null;
  @ApiProperty({ type: String, nullable: true }) disabledAt: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'first failed attempt since its last success' }) failingSince: string | null;
  @ApiProperty() createdAt: string;
  @ApiProperty() updatedAt: string;
}

/** A receiver with its secrets (newest first): the answer of PUT and rotate. */
export class ReceiverWithSecretsDto extends ReceiverDto {
  @ApiProperty({ type: [SecretDto] }) secrets: SecretDto[];
  @ApiProperty({
    type: TaskDto,
    nullable: true,
    description: 'a disable or enable still holding or releasing its callbacks (GET /v1/tasks/{id} follows it); null when none runs',
  })
  task: TaskDto | null;
}

export class LatencyFiguresDto {
  @ApiProperty({ type: Number, nullable: true }) p50: number | null;
  @ApiProperty({ type: Number, nullable: true }) p90: number | null;
  @ApiProperty({ type: Number, nullable: true }) p99: number | null;
}

export class ReceiverFiguresDto {
  @ApiProperty() since: string;
  @ApiProperty({ description: 'waiting to be sent' }) pending: number;
  @ApiProperty() inFlight: number;
  @ApiProperty({ description: 'pending but held: the receiver is disabled' }) held: number;
  @ApiProperty({ description: 'attempts since `since`' }) attempts: number;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'number' }, description: 'attempts by outcome' }) outcomes: Record<string, number>;
  @ApiProperty({ type: LatencyFiguresDto }) latency: LatencyFiguresDto;
}

/** `GET /v1/receivers/{name}`. */
export class ReceiverDetailDto extends ReceiverWithSecretsDto {
  @ApiProperty({ type: ReceiverFiguresDto }) figures: ReceiverFiguresDto;
}

export class ReceiverPageDto {
  @ApiProperty({ type: [ReceiverDto] }) items: ReceiverDto[];
  @ApiProperty({ type: String, nullable: true, description: 'the last name of this page; null on the last page' }) nextCursor: string | null;
}

export class DeletedReceiverDto {
  @ApiProperty() name: string;
  @ApiProperty() deleted: boolean;
  @ApiProperty({ description: 'its pending and in-flight callbacks cancelled before this answer' }) cancelledCallbacks: number;
  @ApiProperty({
    type: TaskDto,
    nullable: true,
    description: 'the task cancelling the rest of its callbacks, when there were more than this answer could wait for; null when all are done',
  })
  task: TaskDto | null;
}
