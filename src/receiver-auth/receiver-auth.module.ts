import { Module } from '@nestjs/common';
import { CredentialRepository } from './credential.repository.js';
import { CredentialService } from './credential.service.js';
import { TokenRepository } from './token.repository.js';

/**
 * Receivers' credentials at rest: `auth` (basic, bearer, OAuth2 client credentials)
 * and `tls` (mutual TLS), sealed under SECRETS_KEY, and the OAuth2 tokens the workers
 * share. The worker applies them (src/dispatch/auth).
 */
@Module({
  providers: [CredentialRepository, CredentialService, TokenRepository],
  exports: [CredentialRepository, CredentialService, TokenRepository],
})
export class ReceiverAuthModule {}
