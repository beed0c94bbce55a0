import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** The phases of one attempt's exchange, as an attempt, a receiver's test call and a sequence diagram report them. */
export class PhasesDto {
  @ApiProperty({ type: Number, nullable: true }) dnsMs: number | null;
  @ApiProperty({ type: Number, nullable: true }) connectMs: number | null;
  @ApiProperty({ type: Number, nullable: true }) tlsMs: number | null;
  @ApiPropertyOptional({ type: Number, description: 'Through EGRESS_PROXY_URL only: the CONNECT tunnel (connectMs is then the connection to the proxy)' })
  tunnelMs?: number;
  @ApiProperty({ type: Number, nullable: true }) firstByteMs: number | null;
  @ApiPropertyOptional({
    type: Number,
    description: "With a receiver's OAuth2 auth, when the attempt fetched (or waited for) a token first: how long that took, before the call",
  })
  tokenMs?: number;
}
