import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsISO8601, IsOptional, IsString, IsUUID, MaxLength } from 'class-validator';
import { NoNul } from '../../common/validators.js';
import { PRIORITIES, RECOVERABLE, RECOVERY_STATES, type Priority, type Recoverable, type RecoveryState } from '../../model/states.js';

/**
 * `POST /v1/recoveries` (and `/preview`): which failed or cancelled callbacks of your
 * key to send again. At least one of receiver, host, batch or event, or a window
 * (since) of at most 31 days.
 */
export class CreateRecoveryDto {
  @ApiPropertyOptional({ example: 'merchant-42', description: 'Only callbacks of this receiver of your key (400 when there is none)' })
  @IsOptional()
  @MaxLength(128)
  @IsString()
  receiver?: string;

  @ApiPropertyOptional({ example: 'https://shop.example:443', description: 'Only callbacks to this destination, scheme://host[:port]' })
  @IsOptional()
  @MaxLength(2048)
  @IsString()
  host?: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'Only callbacks of this batch of your key (400 when there is none)' })
  @IsOptional()
  @IsUUID()
  batch?: string;

  @ApiPropertyOptional({
    example: 'evt_123',
    description: 'Only the deliveries of this event of your key: its id, or the id you gave it (400 when there is none)',
  })
  @IsOptional()
  @NoNul()
  @MaxLength(256)
  @IsString()
  event?: string;

  @ApiPropertyOptional({ type: [String], enum: RECOVERABLE, default: ['failed'], description: 'Which finished callbacks to send again' })
  @IsOptional()
  @IsIn(RECOVERABLE, { each: true })
  @ArrayMaxSize(2)
  @ArrayMinSize(1)
  @IsArray()
  status?: Recoverable[];

  @ApiPropertyOptional({
    format: 'date-time',
    description: 'Only callbacks accepted at or after this time; required (with at most 31 days to until) when no receiver, host, batch or event is given',
  })
  @IsOptional()
  @IsISO8601({ strict: true })
  since?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'Only callbacks accepted before this time (default: now)' })
  @IsOptional()
  @IsISO8601({ strict: true })
  until?: string;

  @ApiPropertyOptional({
    enum: PRIORITIES,
    default: 'low',
    description: 'The priority the recovered callbacks go at, so a large replay does not push live traffic aside',
  })
  @IsOptional()
  @IsIn(PRIORITIES)
  priority?: Priority;
}

export class RecoveryPreviewDto {
  @ApiProperty({ description: 'callbacks a recovery with this body would send again now' }) matched: number;
}

/** A recovery and its progress: `GET /v1/recoveries/{id}`. */
export class RecoveryDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ enum: RECOVERY_STATES, description: 'running: still requeueing; done: all matching callbacks requeued; cancelled: stopped before that' })
  state: RecoveryState;
  @ApiProperty({ type: String, nullable: true, description: 'the receiver it is limited to (null: any, or deleted since)' }) receiver: string | null;
  @ApiProperty({ type: String, nullable: true }) host: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'uuid' }) batchId: string | null;
  @ApiProperty({ type: [String], enum: RECOVERABLE }) status: Recoverable[];
  @ApiProperty({ type: String, nullable: true, format: 'date-time' }) since: string | null;
  @ApiProperty({ format: 'date-time' }) until: string;
  @ApiProperty({ enum: PRIORITIES }) priority: Priority;
  @ApiProperty({ description: 'callbacks that matched when it was made' }) matched: number;
  @ApiProperty({ description: 'callbacks it has sent again so far' }) requeued: number;
  @ApiProperty({ description: 'of those it sent again (and last), how many are pending or in flight now (held ones included)' }) pending: number;
  @ApiProperty({ description: '… have succeeded since' }) delivered: number;
  @ApiProperty({ description: '… have failed again' }) failed: number;
  @ApiProperty({ description: '… were cancelled since' }) cancelled: number;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time', description: 'when its last chunk committed' }) updatedAt: string;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', description: 'when it was done or cancelled' }) finishedAt: string | null;
}
