import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsOptional, IsString, Length } from 'class-validator';
import { NoNul } from '../../common/validators.js';

export class CreateKeyDto {
  @ApiProperty() @NoNul() @Length(1, 100) @IsString() name: string;
  @ApiPropertyOptional() @IsOptional() @IsBoolean() admin?: boolean;
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
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) revokedAt: string | null;
}

export class KeyListDto {
  @ApiProperty({ type: [KeyDto] }) items: KeyDto[];
}

export class RevokedKeyDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ enum: [true] }) revoked: true;
}
