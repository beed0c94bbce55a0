import { Module } from '@nestjs/common';
import { CallbacksModule } from '../callbacks/callbacks.module.js';
import { ReceiversModule } from '../receivers/receivers.module.js';
import { SigningModule } from '../signing/signing.module.js';
import { BatchController } from './batch.controller.js';
import { BatchRepository } from './batch.repository.js';
import { BatchService } from './batch.service.js';
import { PendingQuota } from './pending-quota.service.js';

@Module({
  imports: [CallbacksModule, ReceiversModule, SigningModule],
  controllers: [BatchController],
  providers: [BatchRepository, BatchService, PendingQuota],
  exports: [BatchService, BatchRepository, PendingQuota],
})
export class BatchesModule {}
