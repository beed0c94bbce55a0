import { Module } from '@nestjs/common';
import { ReceiverTaskKinds } from './receiver.task-kinds.js';
import { ReceiverAuthModule } from '../receiver-auth/receiver-auth.module.js';
import { SigningModule } from '../signing/signing.module.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { TransformsModule } from '../transforms/transforms.module.js';
import { ReceiverTransformController } from './receiver-transform.controller.js';
import { ReceiverTransformService } from './receiver-transform.service.js';
import { ReceiverController } from './receiver.controller.js';
import { ReceiverRepository } from './receiver.repository.js';
import { ReceiverService } from './receiver.service.js';

/** Receivers: the parties a key calls back, with their settings and signing secrets. */
@Module({
  imports: [SigningModule, TasksModule, TransformsModule, ReceiverAuthModule],
  controllers: [ReceiverController, ReceiverTransformController],
  providers: [ReceiverTaskKinds, ReceiverRepository, ReceiverService, ReceiverTransformService],
  exports: [ReceiverService, ReceiverRepository, ReceiverTransformService],
})
export class ReceiversModule {}
