import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsInt, IsOptional, IsString, Length, Max, Min } from 'class-validator';
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
  @ApiProperty({ minimum: 1, maximum: 1000, description: "The key's share of the workers while several keys have due callbacks" }) weight: number;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) revokedAt: string | null;
}

/** PATCH /v1/keys/:id. */
export class UpdateKeyDto {
  @ApiProperty({
    minimum: 1,
    maximum: 1000,
    description: "The key's weight in the fair share of every claim while several keys have due callbacks (default 1)",
  })
  @Max(1000)
  @Min(1)
  @IsInt()
  weight: number;
}

export class KeyListDto {
  @ApiProperty({ type: [KeyDto] }) items: KeyDto[];
}

export class RevokedKeyDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ enum: [true] }) revoked: true;
}
