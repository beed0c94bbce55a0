import { Module } from '@nestjs/common';
import { KeyController } from './key.controller.js';
import { APP_GUARD } from '@nestjs/core';
import { ApiKeyGuard } from './api-key.guard.js';
import { ApiKeyRepository } from './api-key.repository.js';
import { ApiKeyService } from './api-key.service.js';
import { KeyAuthService } from './key-auth.service.js';
import { RateLimitService } from './rate-limit.service.js';

@Module({
  controllers: [KeyController],
  providers: [ApiKeyRepository, ApiKeyService, KeyAuthService, RateLimitService, { provide: APP_GUARD, useClass: ApiKeyGuard }],
  exports: [ApiKeyService, KeyAuthService, RateLimitService],
})
export class AuthModule {}
