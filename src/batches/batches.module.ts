import { Module } from '@nestjs/common';
import { CallbacksModule } from '../callbacks/callbacks.module.js';
import { BatchController } from './batch.controller.js';
import { BatchRepository } from './batch.repository.js';
import { BatchService } from './batch.service.js';

@Module({
  imports: [CallbacksModule],
  controllers: [BatchController],
  providers: [BatchRepository, BatchService],
  exports: [BatchService],
})
export class BatchesModule {}
