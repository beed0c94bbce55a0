import { Module } from '@nestjs/common';
import { RecoveryTaskKind } from './recovery.task-kind.js';
import { ReceiversModule } from '../receivers/receivers.module.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { RecoveryController } from './recovery.controller.js';
import { RecoveryRepository } from './recovery.repository.js';
import { RecoveryService } from './recovery.service.js';

/** Recoveries: bulk replays of failed callbacks, run as tasks (recovery.sql.ts). */
@Module({
  imports: [ReceiversModule, TasksModule],
  controllers: [RecoveryController],
  providers: [RecoveryTaskKind, RecoveryRepository, RecoveryService],
  exports: [RecoveryService],
})
export class RecoveriesModule {}
