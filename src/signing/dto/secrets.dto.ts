import { ApiProperty } from '@nestjs/swagger';

/** One signing secret: `whsec_` + base64. */
export class SecretDto {
  @ApiProperty({ example: 'whsec_dGhpcyBpcyBhbiBleGFtcGxlIHNlY3JldCE=' }) secret: string;
  @ApiProperty() createdAt: string;
  @ApiProperty({ type: String, nullable: true, description: 'null while current; else the end of its rotation overlap' }) expiresAt: string | null;
}

/** The secrets of one destination (newest first). */
export class DestinationSecretsDto {
  @ApiProperty({ example: 'https://shop.example:443' }) destination: string;
  @ApiProperty({ type: [SecretDto] }) secrets: SecretDto[];
}
