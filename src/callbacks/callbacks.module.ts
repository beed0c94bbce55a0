import { Module } from '@nestjs/common';
import { CallbackController } from './callback.controller.js';
import { CallbackRepository } from './callback.repository.js';
import { CallbackService } from './callback.service.js';

@Module({
  controllers: [CallbackController],
  providers: [CallbackRepository, CallbackService],
  exports: [CallbackRepository, CallbackService],
})
export class CallbacksModule {}
