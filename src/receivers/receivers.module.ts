import { Module } from '@nestjs/common';
import { ReceiverAuthModule } from '../receiver-auth/receiver-auth.module.js';
import { SigningModule } from '../signing/signing.module.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { ReceiverController } from './receiver.controller.js';
import { ReceiverRepository } from './receiver.repository.js';
import { ReceiverService } from './receiver.service.js';

/** Receivers: the parties a key calls back, with their settings and signing secrets. */
@Module({
  imports: [SigningModule, TasksModule, ReceiverAuthModule],
  controllers: [ReceiverController],
  providers: [ReceiverRepository, ReceiverService],
  exports: [ReceiverService, ReceiverRepository],
})
export class ReceiversModule {}
