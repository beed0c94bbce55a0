import { ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';

export class LiveDto {
  @ApiProperty({ enum: ['ok'] }) status: 'ok';
}

export class CheckDto {
  @ApiProperty() ok: boolean;
  @ApiPropertyOptional({ description: 'Why a check failed' }) detail?: string;
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
}
