import { Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../auth/api-key.guard.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { ApiAuthErrors } from '../common/error.dto.js';
import { SigningSecretsDto } from './dto/signing-secret.dto.js';
import { SigningSecretService } from './signing-secret.service.js';

@ApiTags('signing')
@ApiBearerAuth()
@ApiAuthErrors()
@Controller('v1/signing-secret')
export class SigningController {
  constructor(private readonly secrets: SigningSecretService) {}

  /** The secrets your receivers verify `webhook-signature` with (newest first). */
  @Get()
  @ApiOkResponse({ type: SigningSecretsDto })
  get(@CurrentKey() key: AuthenticatedKey): Promise<SigningSecretsDto> {
    return this.secrets.describe(key.id);
  }

  /** Starts signing with a new secret; the old one also signs for 24 h. */
  @Post('rotate')
  @HttpCode(200)
  @ApiOkResponse({ type: SigningSecretsDto })
  rotate(@CurrentKey() key: AuthenticatedKey): Promise<SigningSecretsDto> {
    return this.secrets.rotate(key.id);
  }
}
