import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsNumber, Max, Min, ValidateIf } from 'class-validator';

/** PUT /v1/hosts/:host/limits. A field left out keeps its value; null goes back to the default. */
export class HostLimitsDto {
  @ApiPropertyOptional({
    type: 'integer',
    nullable: true,
    minimum: 1,
    maximum: 10000,
    description: 'calls in flight at once, all workers together; null: HOST_MAX_IN_FLIGHT',
  })
  @ValidateIf((o: HostLimitsDto) => o.maxInFlight !== null && o.maxInFlight !== undefined)
  @Max(10_000)
  @Min(1)
  @IsInt()
  maxInFlight?: number | null;

  @ApiPropertyOptional({ type: 'number', nullable: true, minimum: 0.01, maximum: 100000, description: 'calls started per second; null: no rate limit' })
  @ValidateIf((o: HostLimitsDto) => o.ratePerSec !== null && o.ratePerSec !== undefined)
  @Max(100_000)
  @Min(0.01)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  ratePerSec?: number | null;
}
