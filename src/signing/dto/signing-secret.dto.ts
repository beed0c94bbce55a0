import { ApiProperty } from '@nestjs/swagger';

export class SigningSecretDto {
  @ApiProperty({ description: 'whsec_… (Standard Webhooks)' }) secret: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'When a rotated-out secret stops signing' }) expiresAt: string | null;
}

export class SigningSecretsDto {
  @ApiProperty({ type: [SigningSecretDto], description: 'Newest first; every one of them signs' }) secrets: SigningSecretDto[];
}
