import { Module } from '@nestjs/common';
import { SigningController } from './signing.controller.js';
import { SigningSecretRepository } from './signing-secret.repository.js';
import { SigningSecretService } from './signing-secret.service.js';

@Module({
  controllers: [SigningController],
  providers: [SigningSecretRepository, SigningSecretService],
  exports: [SigningSecretService],
})
export class SigningModule {}
