import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { notFound } from '../common/app.error.js';
import { ApiAuthErrors, ApiErrors } from '../common/error.dto.js';
import { UuidParam } from '../common/params.js';
import { AdminOnly } from './api-key.guard.js';
import { ApiKeyService } from './api-key.service.js';
import { CreatedKeyDto, CreateKeyDto, KeyDto, KeyListDto, RevokedKeyDto, UpdateKeyDto } from './dto/key.dto.js';

/** Key management, for admin keys only. A new key is shown once, in the 201 response. */
@ApiTags('keys')
@ApiBearerAuth()
@ApiAuthErrors()
@ApiErrors(403)
@AdminOnly()
@Controller('v1/keys')
export class KeyController {
  constructor(private readonly keys: ApiKeyService) {}

  @Post()
  @ApiOperation({ summary: 'Create an API key' })
  @ApiCreatedResponse({ type: CreatedKeyDto })
  @ApiErrors(415)
  create(@Body() dto: CreateKeyDto): Promise<CreatedKeyDto> {
    return this.keys.createKey(dto.name, { isAdmin: dto.admin ?? false, allowPrivateNetworks: dto.allowPrivateNetworks ?? false });
  }

  @Get()
  @ApiOperation({ summary: 'List API keys' })
  @ApiOkResponse({ type: KeyListDto })
  async list(): Promise<KeyListDto> {
    const rows = await this.keys.listKeys();
    return {
      items: rows.map(toKeyDto),
    };
  }

  /** Sets a key's weight (its share of the workers while several keys have due callbacks) and its grant of private networks. */
  @Patch(':id')
  @ApiOperation({ summary: "Set an API key's weight and its grant of private networks" })
  @ApiOkResponse({ type: KeyDto })
  @ApiErrors(404, 415)
  async update(@Param('id', UuidParam) id: string, @Body() dto: UpdateKeyDto): Promise<KeyDto> {
    const k = await this.keys.updateKey(id, { weight: dto.weight, allowPrivateNetworks: dto.allowPrivateNetworks });
    if (!k) throw notFound('key');
    return toKeyDto(k);
  }

  @Delete(':id')
  @ApiOperation({ summary: 'Revoke an API key' })
  @HttpCode(200)
  @ApiOkResponse({ type: RevokedKeyDto })
  @ApiErrors(404, 409)
  async revoke(@Param('id', UuidParam) id: string): Promise<RevokedKeyDto> {
    if (!(await this.keys.revokeKey(id))) throw notFound('active key');
    return { id, revoked: true };
  }
}

/** A key as the API shows it (never its hash). */
function toKeyDto(k: {
  id: string;
  name: string;
  prefix: string;
  isAdmin: boolean;
  weight: number;
  allowPrivateNetworks: boolean;
  createdAt: Date;
  revokedAt: Date | null;
}): KeyDto {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    isAdmin: k.isAdmin,
    weight: k.weight,
    allowPrivateNetworks: k.allowPrivateNetworks,
    createdAt: k.createdAt.toISOString(),
    revokedAt: k.revokedAt?.toISOString() ?? null,
  };
}
