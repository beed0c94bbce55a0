import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { Allow, IsOptional, IsString, MaxLength } from 'class-validator';
import { cursorParam, dateParam, optionalDestinationParam, pageLimit } from '../../common/params.js';
import { PhasesDto } from '../../model/phases.dto.js';
import { statusParam, CALLBACK_STATUSES, OUTCOMES, PRIORITIES, type CallbackStatus, type Priority } from '../../model/states.js';

/** Why a pending callback is not being sent (see the README, "Who goes next"). */
export class WaitingDto {
  @ApiProperty({ enum: ['receiver_disabled', 'not_due', 'ordering', 'host_paused', 'host_at_capacity', 'rate_limited', 'key_share'] }) reason: string;
  @ApiProperty() detail: string;
  @ApiPropertyOptional({ format: 'uuid', description: 'With `ordering`: the callback it waits for' }) callbackId?: string;
}

/** A callback as status reads and listings show it (not its headers or body). */
export class CallbackDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) batchId: string;
  @ApiProperty({ type: String, nullable: true }) externalId: string | null;
  @ApiProperty() url: string;
  @ApiProperty({ description: 'Destination scheme://host:port' }) host: string;
  @ApiProperty() method: string;
  @ApiProperty({ enum: CALLBACK_STATUSES }) status: CallbackStatus;
  @ApiProperty({ description: 'Attempts made' }) attemptCount: number;
  @ApiProperty() maxAttempts: number;
  @ApiProperty() timeoutMs: number;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'When a pending callback is due' }) nextAttemptAt: string | null;
  @ApiProperty({ type: Number, nullable: true }) lastStatusCode: number | null;
  @ApiProperty({ type: String, nullable: true }) lastError: string | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) completedAt: string | null;
  @ApiProperty({ enum: PRIORITIES }) priority: Priority;
  @ApiProperty({ type: String, nullable: true, description: 'Callbacks of the key with this ordering key go one at a time, in acceptance order' })
  orderingKey: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'The receiver it was sent for, by name' }) receiver: string | null;
  @ApiProperty({
    type: WaitingDto,
    nullable: true,
    description: 'Why a pending callback is not being sent: in lists only a disabled receiver; on GET /v1/callbacks/{id} every reason',
  })
  waiting: WaitingDto | null;
}

/** A request as its receiver's transform made it and as it went out (docs/guide.md, Transformations). */
export class TransformedRequestDto {
  @ApiProperty() method: string;
  @ApiProperty() url: string;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } }) headers: Record<string, string>;
  @ApiProperty({ type: String, nullable: true }) body: string | null;
}

export class AttemptDto {
  @ApiProperty({ description: '1, 2, …' }) number: number;
  @ApiProperty({ format: 'date-time' }) startedAt: string;
  @ApiProperty() durationMs: number;
  @ApiProperty({ type: Number, nullable: true, description: 'HTTP status; null without a response' }) statusCode: number | null;
  @ApiProperty({ enum: OUTCOMES }) outcome: string;
  @ApiProperty({ type: String, nullable: true }) error: string | null;
  @ApiProperty({ type: PhasesDto, description: 'Phase timings, ms from the start' }) phases: PhasesDto;
  @ApiProperty({
    type: String,
    nullable: true,
    enum: ['basic', 'bearer', 'oauth2'],
    description: 'The receiver authentication the call was sent with (never the credential); null: none',
  })
  auth: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true, description: 'Response headers as received' }) responseHeaders: unknown;
  @ApiProperty({ type: String, nullable: true, description: 'Start of the response body (capped)' }) responseBody: string | null;
  @ApiProperty({
    type: TransformedRequestDto,
    nullable: true,
    description: "The request its receiver's transform made, as sent (headers with the signature); null: the callback's stored request went, or nothing did",
  })
  transformed: TransformedRequestDto | null;
}

/** GET /v1/callbacks/:id: the callback with all its attempts. */
export class CallbackDetailDto extends CallbackDto {
  @ApiProperty({ type: [AttemptDto] }) attempts: AttemptDto[];
}

export class CallbackPageDto {
  @ApiProperty({ type: [CallbackDto], description: 'In creation order' }) items: CallbackDto[];
  @ApiProperty({ type: String, nullable: true, description: 'cursor of the next page; null on the last' }) nextCursor: string | null;
}

/** ?status=&host=&since=&cursor=&limit= of GET /v1/callbacks. */
export class CallbackListQueryDto {
  @ApiPropertyOptional({ enum: CALLBACK_STATUSES })
  @Allow()
  @Transform(({ value }) => statusParam(value))
  status?: CallbackStatus;

  @ApiPropertyOptional({ description: 'Destination scheme://host:port', example: 'https://example.com:443' })
  @Allow()
  @Transform(({ value }) => optionalDestinationParam('host', value))
  host?: string;

  @ApiPropertyOptional({ type: String, format: 'date-time', description: 'Only callbacks created since (ISO-8601)' })
  @Allow()
  @Transform(({ value }) => dateParam('since', value))
  since?: Date;

  @ApiPropertyOptional({ description: 'nextCursor of the previous page' })
  @Allow()
  @Transform(({ value }) => cursorParam(value))
  cursor?: string;

  @ApiPropertyOptional({ description: 'Only the callbacks of this receiver of your key (404 when there is none)' })
  @IsOptional()
  @MaxLength(128)
  @IsString()
  receiver?: string;

  @ApiPropertyOptional({ description: "Only the deliveries of this event of your key (its id: POST /v1/events' `id`; 404 when there is none)" })
  @IsOptional()
  @MaxLength(255)
  @IsString()
  event?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 1000, default: 100 })
  @Allow()
  @Transform(({ value }) => pageLimit(value))
  limit: number = 100;
}
