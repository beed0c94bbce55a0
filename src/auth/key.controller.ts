import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsBoolean, IsInt, IsOptional, IsString, Length, Max, Min } from 'class-validator';
import { notFound } from '../common/app.error.js';
import { UuidParam } from '../common/params.js';
import { NoNul } from '../common/validators.js';
import { AdminOnly } from './api-key.guard.js';
import { ApiKeyService } from './api-key.service.js';

export class CreateKeyDto {
  @ApiProperty() @NoNul() @Length(1, 100) @IsString() name: string;
  @ApiPropertyOptional() @IsOptional() @IsBoolean() admin?: boolean;
}

export class UpdateKeyDto {
  @ApiProperty({ minimum: 1, maximum: 1000, description: "The key's weight in the fair share of every claim while several keys have due callbacks (default 1)" })
  @Max(1000) @Min(1) @IsInt() weight: number;
}

/** Key management, for admin keys only. A new key is shown once, in the 201 response. */
@ApiTags('keys')
@ApiBearerAuth()
@AdminOnly()
@Controller('v1/keys')
export class KeyController {
  constructor(private readonly keys: ApiKeyService) {}

  @Post()
  create(@Body() dto: CreateKeyDto) {
    return this.keys.createKey(dto.name, { isAdmin: dto.admin ?? false });
  }

  @Get()
  async list() {
    const rows = await this.keys.listKeys();
    return {
      items: rows.map((k) => ({
        id: k.id, name: k.name, prefix: k.prefix, isAdmin: k.isAdmin, weight: k.weight,
        createdAt: k.createdAt.toISOString(), revokedAt: k.revokedAt?.toISOString() ?? null,
      })),
    };
  }

  /** Sets a key's weight: its share of the workers while several keys have due callbacks. */
  @Patch(':id')
  async update(@Param('id', UuidParam) id: string, @Body() dto: UpdateKeyDto) {
    const k = await this.keys.setWeight(id, dto.weight);
    if (!k) throw notFound('key');
    return { id: k.id, name: k.name, prefix: k.prefix, isAdmin: k.isAdmin, weight: k.weight, createdAt: k.createdAt.toISOString(), revokedAt: k.revokedAt?.toISOString() ?? null };
  }

  @Delete(':id')
  @HttpCode(200)
  async revoke(@Param('id', UuidParam) id: string) {
    if (!(await this.keys.revokeKey(id))) throw notFound('active key');
    return { id, revoked: true };
  }
}
