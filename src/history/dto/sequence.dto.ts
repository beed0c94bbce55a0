import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Allow } from 'class-validator';
import { PhasesDto } from '../../model/phases.dto.js';

export class TimelineCallDto {
  @ApiProperty({ format: 'uuid' }) callbackId: string;
  @ApiProperty() url: string;
  @ApiProperty({ type: String, nullable: true }) externalId: string | null;
  @ApiProperty() attempt: number;
  @ApiProperty({ description: 'HTTP status; 0 without a response (timeout, connection error…), as curl reports it' }) code: number;
  @ApiProperty() outcome: string;
  @ApiProperty({ description: 'ms from the batch’s first send' }) startMs: number;
  @ApiProperty() endMs: number;
  @ApiProperty() totalMs: number;
  @ApiProperty({ type: PhasesDto }) phases: PhasesDto;
}

/** The JSON form of GET /v1/batches/:id/sequence. */
export class SequenceDto {
  @ApiProperty({ format: 'uuid' }) batchId: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'First send' }) startedAt: string | null;
  @ApiProperty({ description: 'First send to last end, ms' }) spanMs: number;
  @ApiProperty({ type: [TimelineCallDto] }) calls: TimelineCallDto[];
}

export class SequenceQueryDto {
  @ApiPropertyOptional({ enum: ['text', 'json'], description: 'default: text, or json when Accept asks for application/json; other values are ignored' })
  @Allow()
  format?: string;
}
