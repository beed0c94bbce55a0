import { Module } from '@nestjs/common';
import { BatchesModule } from '../batches/batches.module.js';
import { ReceiversModule } from '../receivers/receivers.module.js';
import { EventTypeController } from './event-type.controller.js';
import { EventTypeRepository } from './event-type.repository.js';
import { EventTypeService } from './event-type.service.js';
import { EventController } from './event.controller.js';
import { EventRepository } from './event.repository.js';
import { EventService } from './event.service.js';
import { PayloadSchemaCache } from './payload-schema.cache.js';

/** Events: types with their payload schemas, and events published under them, fanned out to the receivers subscribed. */
@Module({
  imports: [BatchesModule, ReceiversModule],
  controllers: [EventTypeController, EventController],
  providers: [EventTypeRepository, EventTypeService, PayloadSchemaCache, EventRepository, EventService],
  exports: [EventTypeService, PayloadSchemaCache],
})
export class EventsModule {}
