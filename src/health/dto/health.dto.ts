import { ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';

export class LiveDto {
  @ApiProperty({ enum: ['ok'] }) status: 'ok';
}

export class CheckDto {
  @ApiProperty() ok: boolean;
  @ApiPropertyOptional({ description: 'Why a check failed' }) detail?: string;
}

/** The read replica (DATABASE_READ_URL): informational, it never fails the readiness. */
export class ReplicaDto {
  @ApiProperty({ enum: ['up', 'lagging', 'down'], description: '`up`: lists and history are read there; otherwise from the primary' })
  state: 'up' | 'lagging' | 'down';
  @ApiPropertyOptional({ description: 'How far behind the primary it was at the last check, in ms' }) lagMs?: number;
  @ApiPropertyOptional({ description: 'Why it is skipped' }) detail?: string;
}

/** 200 of /health/ready; a 503 carries the same checks in the error's `details`. */
export class ReadyDto {
  @ApiProperty({ enum: ['ok'] }) status: 'ok';
  @ApiProperty({
    type: 'object',
    additionalProperties: { $ref: getSchemaPath(CheckDto) },
    description: 'database, migrations and (in a worker) worker',
  })
  checks: Record<string, CheckDto>;
  @ApiPropertyOptional({ type: ReplicaDto, description: 'Only with DATABASE_READ_URL' }) replica?: ReplicaDto;
}
