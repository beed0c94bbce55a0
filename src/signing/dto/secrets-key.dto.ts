import { ApiProperty } from '@nestjs/swagger';

/** How many signing secrets one key seals. */
export class SecretsKeyCountDto {
  @ApiProperty({
    type: String,
    nullable: true,
    example: '3f9c1a7be2d04c55',
    description: 'the key id; null: secrets still in plain text (the next start seals them)',
  })
  keyId: string | null;
  @ApiProperty({ example: 120 }) secrets: number;
  @ApiProperty({ description: 'this is SECRETS_KEY, which seals every new secret' }) current: boolean;
  @ApiProperty({ description: 'this process can open them (SECRETS_KEY or SECRETS_KEY_PREVIOUS)' }) held: boolean;
}

/** The keys signing secrets are sealed under, as this process sees them. */
export class SecretsKeyDto {
  @ApiProperty({ example: '3f9c1a7be2d04c55', description: "SECRETS_KEY's id" }) currentKeyId: string;
  @ApiProperty({ type: [SecretsKeyCountDto] }) keys: SecretsKeyCountDto[];
}

/** What a re-encryption did. */
export class ReencryptedDto extends SecretsKeyDto {
  @ApiProperty({ example: 120, description: 'secrets sealed under SECRETS_KEY by this request' }) reencrypted: number;
}
