import { Module } from '@nestjs/common';
import { BatchesModule } from '../batches/batches.module.js';
import { CallbacksModule } from '../callbacks/callbacks.module.js';
import { SequenceController } from './sequence.controller.js';
import { SequenceService } from './sequence.service.js';

@Module({
  imports: [BatchesModule, CallbacksModule],
  controllers: [SequenceController],
  providers: [SequenceService],
})
export class HistoryModule {}
