import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { Allow } from 'class-validator';
import { dateParam, pageLimit } from '../../common/params.js';
import { BREAKER_STATES, type BreakerStateName } from '../../model/states.js';
import { hostCursorParam } from '../host.policy.js';

export class HostLimitsViewDto {
  @ApiProperty({ description: 'Calls in flight at once, all workers together' }) maxInFlight: number;
  @ApiProperty({ description: 'True while maxInFlight is HOST_MAX_IN_FLIGHT' }) maxInFlightIsDefault: boolean;
  @ApiProperty({ type: Number, nullable: true, description: 'Calls started per second; null: no rate limit' }) ratePerSec: number | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) updatedAt: string | null;
}

export class BreakerDto {
  @ApiProperty({ enum: BREAKER_STATES }) state: BreakerStateName;
  @ApiProperty() consecutiveFailures: number;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) openedAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) openUntil: string | null;
}

export class HostLatencyDto {
  @ApiProperty({ description: 'Attempts in the window' }) attempts: number;
  @ApiProperty({ type: Number, nullable: true }) p50Ms: number | null;
  @ApiProperty({ type: Number, nullable: true }) p90Ms: number | null;
  @ApiProperty({ type: Number, nullable: true }) p99Ms: number | null;
  @ApiProperty({ type: Number, nullable: true, description: 'Share of attempts that did not succeed, 0 to 1' }) errorRate: number | null;
}

export class GoneEndpointDto {
  @ApiProperty() url: string;
  @ApiProperty({ description: 'The status that marked it gone (410)' }) statusCode: number;
  @ApiProperty({ format: 'date-time' }) goneAt: string;
}

/** One destination: its limits, load, breaker and recent latency. */
export class HostDto {
  @ApiProperty({ description: 'Destination scheme://host:port' }) host: string;
  @ApiProperty({ type: HostLimitsViewDto }) limits: HostLimitsViewDto;
  @ApiProperty({ description: 'Calls in flight now, all workers' }) inFlight: number;
  @ApiProperty({ description: 'Due callbacks waiting for this host' }) queueDepth: number;
  @ApiProperty({ type: BreakerDto }) breaker: BreakerDto;
  @ApiProperty({ type: HostLatencyDto }) latency: HostLatencyDto;
  @ApiProperty({ type: [GoneEndpointDto] }) goneEndpoints: GoneEndpointDto[];
}

export class HostPageDto {
  @ApiProperty({ format: 'date-time', description: 'Start of the latency window' }) since: string;
  @ApiProperty({ type: [HostDto], description: 'In name order' }) items: HostDto[];
  @ApiProperty({ type: String, nullable: true, description: 'cursor of the next page; null on the last' }) nextCursor: string | null;
}

export class ClearedGoneDto {
  @ApiProperty() host: string;
  @ApiProperty({ description: 'Gone URLs forgotten' }) cleared: number;
}

const SINCE = { type: String, format: 'date-time', description: 'Start of the latency window (ISO-8601; default 15 minutes ago)' } as const;

/** ?since= of GET /v1/hosts/:host. */
export class HostQueryDto {
  @ApiPropertyOptional(SINCE)
  @Allow()
  @Transform(({ value }) => dateParam('since', value))
  since?: Date;
}

/** ?since=&cursor=&limit= of GET /v1/hosts. */
export class HostListQueryDto extends HostQueryDto {
  @ApiPropertyOptional({ description: 'nextCursor of the previous page' })
  @Allow()
  @Transform(({ value }) => hostCursorParam(value))
  cursor?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 1000, default: 100, description: 'hosts per page' })
  @Allow()
  @Transform(({ value }) => pageLimit(value))
  limit: number = 100;
}
