import { Module } from '@nestjs/common';
import { BatchRetryTaskKind } from './batch-retry.task-kind.js';
import { ReceiversModule } from '../receivers/receivers.module.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { CallbackController } from './callback.controller.js';
import { CallbackRepository } from './callback.repository.js';
import { CallbackService } from './callback.service.js';

@Module({
  imports: [ReceiversModule, TasksModule],
  controllers: [CallbackController],
  providers: [BatchRetryTaskKind, CallbackRepository, CallbackService],
  exports: [CallbackRepository, CallbackService],
})
export class CallbacksModule {}
