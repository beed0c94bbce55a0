import { Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminOnly } from '../auth/api-key.guard.js';
import { ApiAuthErrors, ApiErrors } from '../common/error.dto.js';
import { ReencryptedDto, SecretsKeyDto } from './dto/secrets-key.dto.js';
import { SecretsKeyService } from './secrets-key.service.js';

/** The key signing secrets are stored under (SECRETS_KEY), for admin keys only: what seals them, and re-sealing after a key change. */
@ApiTags('signing')
@ApiBearerAuth()
@ApiAuthErrors()
@ApiErrors(403)
@AdminOnly()
@Controller('v1/secrets-key')
export class SecretsKeyController {
  constructor(private readonly keys: SecretsKeyService) {}

  /** How many signing secrets each key seals, and whether this process holds it. */
  @Get()
  @ApiOperation({ summary: 'Count the signing secrets each key seals' })
  @ApiOkResponse({ type: SecretsKeyDto })
  describe(): Promise<SecretsKeyDto> {
    return this.keys.describe();
  }

  /**
   * Re-encrypts every signing secret under SECRETS_KEY, in chunks of 1,000 (each its
   * own transaction), while callbacks keep going out. Start every process with the new
   * key as SECRETS_KEY and the old one in SECRETS_KEY_PREVIOUS first; answers when done.
   */
  @Post('reencrypt')
  @ApiOperation({ summary: 'Re-seal every signing secret under SECRETS_KEY' })
  @HttpCode(200)
  @ApiOkResponse({ type: ReencryptedDto })
  reencrypt(): Promise<ReencryptedDto> {
    return this.keys.reencrypt();
  }
}
