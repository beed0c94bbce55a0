import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Allow } from 'class-validator';
import { Transform } from 'class-transformer';
import { AppError } from '../../common/app.error.js';
import { cursorParam, pageLimit } from '../../common/params.js';
import { statusParam, CALLBACK_STATUSES, type CallbackStatus } from '../../model/states.js';

export const BATCH_STATUSES = ['pending', 'running', 'completed'] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];

/** States a batch retry can send again. */
export const RETRYABLE: readonly CallbackStatus[] = ['failed', 'cancelled'];

export class AcceptedCallbackDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ type: String, nullable: true }) externalId: string | null;
}

/** 202 of POST /v1/batches: the callbacks in request order. */
export class AcceptedBatchDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ type: String, nullable: true }) label: string | null;
  @ApiProperty({ enum: ['pending'] }) status: 'pending';
  @ApiProperty({ description: 'Callbacks in the batch' }) total: number;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ type: [AcceptedCallbackDto], description: 'In request order' }) callbacks: AcceptedCallbackDto[];
}

export class CountsDto {
  @ApiProperty() pending: number;
  @ApiProperty() in_flight: number;
  @ApiProperty() succeeded: number;
  @ApiProperty() failed: number;
  @ApiProperty() cancelled: number;
}

/** A batch as listings show it. */
export class BatchSummaryDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ type: String, nullable: true }) label: string | null;
  @ApiProperty({ enum: BATCH_STATUSES }) status: BatchStatus;
  @ApiProperty() total: number;
  @ApiProperty({ type: CountsDto, description: 'Callbacks per state' }) counts: CountsDto;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) completedAt: string | null;
}

/** GET /v1/batches/:id: the summary and its span on the wire. */
export class BatchDto extends BatchSummaryDto {
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'Start of the first attempt' }) firstAttemptAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'End of the last attempt' }) lastAttemptEndAt: string | null;
  @ApiProperty({ type: Number, nullable: true, description: 'First attempt start to last attempt end, ms' }) makespanMs: number | null;
}

export class BatchPageDto {
  @ApiProperty({ type: [BatchSummaryDto], description: 'Newest first' }) items: BatchSummaryDto[];
  @ApiProperty({ type: String, nullable: true, description: 'cursor of the next page; null on the last' }) nextCursor: string | null;
}

/** ?cursor=&limit= of GET /v1/batches. */
export class BatchListQueryDto {
  @ApiPropertyOptional({ description: 'nextCursor of the previous page' })
  @Allow()
  @Transform(({ value }) => cursorParam(value))
  cursor?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 500, default: 50 })
  @Allow()
  @Transform(({ value }) => pageLimit(value, 50, 500))
  limit: number = 50;
}

/** ?status=&cursor=&limit= of GET /v1/batches/:id/callbacks. */
export class BatchCallbacksQueryDto {
  @ApiPropertyOptional({ enum: CALLBACK_STATUSES })
  @Allow()
  @Transform(({ value }) => statusParam(value))
  status?: CallbackStatus;

  @ApiPropertyOptional({ description: 'nextCursor of the previous page' })
  @Allow()
  @Transform(({ value }) => cursorParam(value))
  cursor?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 1000, default: 100 })
  @Allow()
  @Transform(({ value }) => pageLimit(value))
  limit: number = 100;
}

/** ?status= of POST /v1/batches/:id/retry. */
export class BatchRetryQueryDto {
  @ApiPropertyOptional({ type: String, description: 'failed (default), cancelled, or both comma-separated', example: 'failed,cancelled' })
  @Allow()
  @Transform(({ value }) => retryStatuses(value))
  status: CallbackStatus[] = ['failed'];
}

/** `?status=` of a retry: `failed` when absent or empty; empty parts of the list are skipped, and a list of only those (`?status=,`) is a 400, not a retry of nothing. */
function retryStatuses(value: unknown): CallbackStatus[] {
  if (value === undefined || value === '') return ['failed'];
  const statuses = String(value)
    .split(',')
    .map((s) => statusParam(s.trim(), RETRYABLE))
    .filter((s) => s !== undefined);
  if (statuses.length === 0) throw new AppError('validation_failed', `status must be one of ${RETRYABLE.join(', ')}, or several comma-separated`);
  return [...new Set(statuses)];
}
