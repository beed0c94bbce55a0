import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Allow, IsBoolean, IsOptional, IsString, MaxLength } from 'class-validator';
import { MaxAttemptsSetting, RetryDelaysMsSetting, TimeoutMsSetting } from '../../model/delivery-settings.js';
import { NoNul } from '../../common/validators.js';
import { Verbatim } from '../../common/verbatim.js';

/**
 * `PUT /v1/event-types/{name}`. On an update, what is left out stays as it was, and
 * `null` clears `description` or `schema` (`deprecated: null` leaves it as it is).
 */
export class PutEventTypeDto {
  @ApiPropertyOptional({ type: String, nullable: true }) @IsOptional() @NoNul() @MaxLength(1000) @IsString() description?: string | null;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    description: 'JSON Schema (draft 2020-12), an object, that every payload of this type must pass; null removes it. At most 65,536 bytes as JSON',
    example: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] },
  })
  @Allow()
  @Verbatim()
  schema?: unknown;

  @ApiPropertyOptional({ type: Boolean, nullable: true, description: 'Still accepted; tells senders and receivers to move off it' })
  @IsOptional()
  @IsBoolean()
  deprecated?: boolean | null;

  @TimeoutMsSetting("Per-call timeout of this type's deliveries, ms, below the receiver's own (null: not set)")
  timeoutMs?: number | null;

  @MaxAttemptsSetting("Attempts of this type's deliveries, below the receiver's own (null: not set)")
  maxAttempts?: number | null;

  @RetryDelaysMsSetting()
  retryDelaysMs?: number[] | null;
}

export class EventTypeDto {
  @ApiProperty({ example: 'order.paid' }) name: string;
  @ApiProperty({ type: String, nullable: true }) description: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true, description: 'its JSON Schema; null: any payload' })
  schema: unknown;
  @ApiProperty() deprecated: boolean;
  @ApiProperty({ type: Number, nullable: true, description: "its deliveries' timeout unless the receiver has one; null: the service's" }) timeoutMs:
    number | null;
  @ApiProperty({ type: Number, nullable: true, description: "its deliveries' attempts unless the receiver has its own; null: the service's" }) maxAttempts:
    number | null;
  @ApiProperty({ type: [Number], description: "its deliveries' retry delays unless the receiver has its own; empty: the service's" }) retryDelaysMs: number[];
  @ApiProperty() createdAt: string;
  @ApiProperty() updatedAt: string;
}

export class EventTypePageDto {
  @ApiProperty({ type: [EventTypeDto] }) items: EventTypeDto[];
  @ApiProperty({ type: String, nullable: true, description: 'the last name of this page; null on the last page' }) nextCursor: string | null;
}

export class DeletedEventTypeDto {
  @ApiProperty() name: string;
  @ApiProperty() deleted: boolean;
}
