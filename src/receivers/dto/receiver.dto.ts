import { ApiProperty } from '@nestjs/swagger';
import { SecretDto } from '../../signing/dto/secrets.dto.js';
import { TaskDto } from '../../tasks/dto/task.dto.js';
import { ReceiverAuthDto, ReceiverTlsDto } from '../../receiver-auth/dto/credentials.dto.js';
import { TRANSFORM_PROPERTY, TransformDto } from '../../transforms/dto/transform.dto.js';

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
  @ApiProperty({ type: [String], description: 'the event types it takes (names and prefix.* wildcards)' }) eventTypes: string[];
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true, description: 'its filter on event payloads; null: none' })
  filter: Record<string, unknown> | null;
  @ApiProperty({ type: [SecretDto] }) secrets: SecretDto[];
  @ApiProperty({ type: ReceiverAuthDto, nullable: true, description: 'how its calls authenticate (secrets shown as "set"); null: none' })
  auth: ReceiverAuthDto | null;
  @ApiProperty({ type: ReceiverTlsDto, nullable: true, description: 'its client certificate and CA for mutual TLS (the key shown as "set"); null: none' })
  tls: ReceiverTlsDto | null;
  @ApiProperty({ ...TRANSFORM_PROPERTY, description: 'its transform (docs/guide.md, Transformations); null: none' }) transform: TransformDto | null;
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

/** What the list shows of a receiver's health: its attempts since `since` (the last hour) and its unfinished callbacks now. */
export class ReceiverHealthDto {
  @ApiProperty({ description: 'an hour before the answer: attempts and successes count from here' }) since: string;
  @ApiProperty({ type: String, nullable: true, description: 'its latest successful attempt; null when none was recorded' }) lastSuccessAt: string | null;
  @ApiProperty({ description: 'attempts started since `since`' }) attempts: number;
  @ApiProperty({ description: 'of those, the successful ones' }) successes: number;
  @ApiProperty({ type: Number, nullable: true, description: 'successes / attempts, 0 to 1; null when no attempt started since `since`' })
  successRate: number | null;
  @ApiProperty({ description: 'waiting to be sent (not held)' }) pending: number;
  @ApiProperty() inFlight: number;
  @ApiProperty({ description: 'pending but held: the receiver is disabled' }) held: number;
}

/** A receiver as `GET /v1/receivers` lists it: its settings and its health. */
export class ReceiverListItemDto extends ReceiverDto {
  @ApiProperty({ type: ReceiverHealthDto }) health: ReceiverHealthDto;
}

export class ReceiverPageDto {
  @ApiProperty({ type: [ReceiverListItemDto] }) items: ReceiverListItemDto[];
  @ApiProperty({
    type: String,
    nullable: true,
    description:
      "the next page's `cursor`, null on the last page: by name, the last name of this page; by health, its `failingSince` (or `-`), `/` and its name",
  })
  nextCursor: string | null;
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
