import { ApiProperty } from '@nestjs/swagger';

/**
 * The example secret of the API document: shaped as one, but base64 of 12 bytes
 * ("example only"), fewer than a secret needs, so it is refused wherever a secret is
 * brought and nobody signs with a value everyone can read.
 */
export const EXAMPLE_SECRET = 'whsec_ZXhhbXBsZSBvbmx5';

/** One signing secret: `whsec_` + base64. */
export class SecretDto {
  @ApiProperty({ example: EXAMPLE_SECRET }) secret: string;
  @ApiProperty() createdAt: string;
  @ApiProperty({ type: String, nullable: true, description: 'null while current; else the end of its rotation overlap' }) expiresAt: string | null;
}

/** The secrets of one destination (newest first). */
export class DestinationSecretsDto {
  @ApiProperty({ example: 'https://shop.example:443' }) destination: string;
  @ApiProperty({ type: [SecretDto] }) secrets: SecretDto[];
}
