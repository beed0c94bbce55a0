import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsInt, IsOptional, IsString, Length, Max, Min } from 'class-validator';
import { NoNul } from '../../common/validators.js';

const PRIVATE_NETWORKS =
  'Its callbacks may go to the private ranges ALLOW_PRIVATE_NETWORKS opens (checked on the address each call connects to). ' +
  'Without it they go to public addresses only, whatever ALLOW_PRIVATE_NETWORKS says';

export class CreateKeyDto {
  @ApiProperty() @NoNul() @Length(1, 100) @IsString() name: string;
  @ApiPropertyOptional() @IsOptional() @IsBoolean() admin?: boolean;
  @ApiPropertyOptional({ description: `${PRIVATE_NETWORKS} (default false)` }) @IsOptional() @IsBoolean() allowPrivateNetworks?: boolean;
}

/** 201 of POST /v1/keys: the key itself is shown here once and never again. */
export class CreatedKeyDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty() isAdmin: boolean;
  @ApiProperty({ description: 'The key (cbk_…): send it as `Authorization: Bearer <key>`' }) key: string;
  @ApiProperty({ description: 'Its first characters, stored in clear to find it' }) prefix: string;
}

export class KeyDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty() prefix: string;
  @ApiProperty() isAdmin: boolean;
  @ApiProperty({ minimum: 1, maximum: 1000, description: "The key's share of the workers while several keys have due callbacks" }) weight: number;
  @ApiProperty({ description: PRIVATE_NETWORKS }) allowPrivateNetworks: boolean;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) revokedAt: string | null;
}

/** PATCH /v1/keys/:id: one or both. */
export class UpdateKeyDto {
  @ApiPropertyOptional({
    minimum: 1,
    maximum: 1000,
    description: "The key's weight in the fair share of every claim while several keys have due callbacks (default 1)",
  })
  @IsOptional()
  @Max(1000)
  @Min(1)
  @IsInt()
  weight?: number;
  @ApiPropertyOptional({ description: `${PRIVATE_NETWORKS}. Applies to its callbacks claimed from then on, pending ones included` })
  @IsOptional()
  @IsBoolean()
  allowPrivateNetworks?: boolean;
}

export class KeyListDto {
  @ApiProperty({ type: [KeyDto] }) items: KeyDto[];
}

export class RevokedKeyDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ enum: [true] }) revoked: true;
}
