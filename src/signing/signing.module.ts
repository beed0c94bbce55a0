import { Module } from '@nestjs/common';
import { SecretsKeyController } from './secrets-key.controller.js';
import { SecretsKeyService } from './secrets-key.service.js';
import { SigningController } from './signing.controller.js';
import { SigningSecretRepository } from './signing-secret.repository.js';
import { SigningSecretService } from './signing-secret.service.js';

@Module({
  controllers: [SigningController, SecretsKeyController],
  providers: [SigningSecretRepository, SigningSecretService, SecretsKeyService],
  exports: [SigningSecretService],
})
export class SigningModule {}
