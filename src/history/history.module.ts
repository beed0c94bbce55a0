import { Module } from '@nestjs/common';
import { BatchesModule } from '../batches/batches.module.js';
import { CallbacksModule } from '../callbacks/callbacks.module.js';
import { ReceiversModule } from '../receivers/receivers.module.js';
import { LatencyController } from './latency.controller.js';
import { LatencyRepository } from './latency.repository.js';
import { LatencyService } from './latency.service.js';
import { SequenceController } from './sequence.controller.js';
import { SequenceService } from './sequence.service.js';

@Module({
  imports: [BatchesModule, CallbacksModule, ReceiversModule],
  controllers: [SequenceController, LatencyController],
  providers: [SequenceService, LatencyRepository, LatencyService],
  exports: [LatencyService],
})
export class HistoryModule {}
