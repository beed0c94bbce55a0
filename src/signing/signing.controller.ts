import { Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../auth/api-key.guard.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { AppError } from '../common/app.error.js';
import { destinationParam } from '../common/params.js';
import { DestinationSecretsDto } from './dto/secrets.dto.js';
import { ApiAuthErrors } from '../common/error.dto.js';
import { SigningSecretService } from './signing-secret.service.js';

/** `?destination=` is required: a key has one secret per destination, none of its own. */
function destinationOf(raw: unknown): string {
  if (raw === undefined || raw === '' || typeof raw !== 'string') {
    throw new AppError(
      'validation_failed',
      "destination is required: the scheme://host:port whose secret you want, like https://shop.example:443 (callbacks with a receiver use the receiver's secret: /v1/receivers/{name})",
    );
  }
  return destinationParam('destination', raw);
}

@ApiTags('signing')
@ApiBearerAuth()
@ApiAuthErrors()
@Controller('v1/signing-secret')
export class SigningController {
  constructor(private readonly secrets: SigningSecretService) {}

  /** The secrets a destination verifies `webhook-signature` of callbacks without a receiver with (newest first; made on first use). */
  @Get()
  @ApiOperation({ summary: "Get a destination's signing secrets" })
  @ApiQuery({ name: 'destination', required: true, description: 'scheme://host:port' })
  @ApiOkResponse({ type: DestinationSecretsDto })
  get(@CurrentKey() key: AuthenticatedKey, @Query('destination') destination?: string): Promise<DestinationSecretsDto> {
    return this.secrets.describeDestination(key.id, destinationOf(destination));
  }

  /** Starts signing that destination's callbacks with a new secret; the old one also signs for 24 h. */
  @Post('rotate')
  @ApiOperation({ summary: "Rotate a destination's signing secret" })
  @HttpCode(200)
  @ApiQuery({ name: 'destination', required: true, description: 'scheme://host:port' })
  @ApiOkResponse({ type: DestinationSecretsDto })
  rotate(@CurrentKey() key: AuthenticatedKey, @Query('destination') destination?: string): Promise<DestinationSecretsDto> {
    return this.secrets.rotateDestination(key.id, destinationOf(destination));
  }
}
