import { Module } from '@nestjs/common';
import { ReceiversModule } from '../receivers/receivers.module.js';
import { SigningModule } from '../signing/signing.module.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { OperatorEndpointController } from './operator-endpoint.controller.js';
import { OperatorEndpointRepository } from './operator-endpoint.repository.js';
import { OperatorEndpointService } from './operator-endpoint.service.js';

/** Operator events: the key's own endpoint (PUT /v1/operator-endpoint); the events are stored by the statements of their causes (operator-causes.sql.ts). */
@Module({
  imports: [ReceiversModule, SigningModule, TasksModule],
  controllers: [OperatorEndpointController],
  providers: [OperatorEndpointRepository, OperatorEndpointService],
})
export class OperatorEventsModule {}
