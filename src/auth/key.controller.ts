import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsBoolean, IsOptional, IsString, Length } from 'class-validator';
import { notFound } from '../common/app.error.js';
import { UuidParam } from '../common/params.js';
import { NoNul } from '../common/validators.js';
import { AdminOnly } from './api-key.guard.js';
import { ApiKeyService } from './api-key.service.js';

export class CreateKeyDto {
  @ApiProperty() @NoNul() @Length(1, 100) @IsString() name: string;
  @ApiPropertyOptional() @IsOptional() @IsBoolean() admin?: boolean;
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
        id: k.id, name: k.name, prefix: k.prefix, isAdmin: k.isAdmin,
        createdAt: k.createdAt.toISOString(), revokedAt: k.revokedAt?.toISOString() ?? null,
      })),
    };
  }

  @Delete(':id')
  @HttpCode(200)
  async revoke(@Param('id', UuidParam) id: string) {
    if (!(await this.keys.revokeKey(id))) throw notFound('active key');
    return { id, revoked: true };
  }
}
