import { Module } from '@nestjs/common';
import { EventTypeController } from './event-type.controller.js';
import { EventTypeRepository } from './event-type.repository.js';
import { EventTypeService } from './event-type.service.js';
import { PayloadSchemaCache } from './payload-schema.cache.js';

/** Events: types with their payload schemas (and, published under them, events fanned out to subscribed receivers). */
@Module({
  controllers: [EventTypeController],
  providers: [EventTypeRepository, EventTypeService, PayloadSchemaCache],
  exports: [EventTypeService, PayloadSchemaCache],
})
export class EventsModule {}
