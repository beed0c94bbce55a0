import { Module } from '@nestjs/common';
import { BatchesModule } from '../batches/batches.module.js';
import { ReceiversModule } from '../receivers/receivers.module.js';
import { EventTypeController } from './event-type.controller.js';
import { EventTypeRepository } from './event-type.repository.js';
import { EventTypeService } from './event-type.service.js';
import { EventController } from './event.controller.js';
import { EventRepository } from './event.repository.js';
import { EventService } from './event.service.js';
import { PayloadCheckPool } from './payload-check.pool.js';

/** Events: types with their payload schemas, and events published under them, fanned out to the receivers subscribed. */
@Module({
  imports: [BatchesModule, ReceiversModule],
  controllers: [EventTypeController, EventController],
  providers: [EventTypeRepository, EventTypeService, PayloadCheckPool, EventRepository, EventService],
  exports: [EventTypeService],
})
export class EventsModule {}
