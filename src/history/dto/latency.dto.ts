import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsISO8601, IsOptional, IsString, IsUUID, MaxLength } from 'class-validator';
import { BUCKET_NAMES } from '../latency.policy.js';

export class LatencyQueryDto {
  @ApiPropertyOptional({ description: 'Destination `scheme://host:port`, as in callback.host', example: 'https://example.com:443' })
  @IsOptional()
  @MaxLength(300)
  @IsString()
  host?: string;

  @ApiPropertyOptional({ description: 'Only attempts of this receiver (a name of your key)', example: 'merchant-42' })
  @IsOptional()
  @MaxLength(128)
  @IsString()
  receiver?: string;

  @ApiPropertyOptional({ description: 'Only attempts of this batch', format: 'uuid' })
  @IsOptional()
  @IsUUID()
  batch?: string;

  @ApiPropertyOptional({ description: 'Start of the window (ISO-8601); default: a day before `to`' })
  @IsOptional()
  @IsISO8601({ strict: true })
  from?: string;

  @ApiPropertyOptional({ description: 'End of the window, exclusive (ISO-8601); default: now' })
  @IsOptional()
  @IsISO8601({ strict: true })
  to?: string;

  @ApiPropertyOptional({ enum: BUCKET_NAMES, description: 'Bucket width; default: the finest giving at most 1000 buckets' })
  @IsOptional()
  @IsIn(BUCKET_NAMES)
  bucket?: string;
}

export class LatencyBucketDto {
  @ApiProperty({ description: 'Start of the bucket (ISO-8601), aligned to the bucket width in UTC' }) start: string;
  @ApiProperty({ description: 'Attempts started in the bucket' }) count: number;
  @ApiProperty({ description: 'Attempts with outcome success' }) ok: number;
  @ApiProperty({ description: 'All other attempts' }) failed: number;
  @ApiProperty({ description: 'Median duration, ms' }) p50: number;
  @ApiProperty({ description: '90th percentile duration, ms' }) p90: number;
  @ApiProperty({ description: '99th percentile duration, ms' }) p99: number;
  @ApiProperty({ description: 'Longest duration, ms' }) max: number;
}

export class LatencyHistoryDto {
  @ApiProperty({ enum: BUCKET_NAMES }) bucket: string;
  @ApiProperty() from: string;
  @ApiProperty() to: string;
  @ApiProperty({ type: [LatencyBucketDto], description: 'Buckets in time order; buckets without attempts are omitted' })
  items: LatencyBucketDto[];
}
