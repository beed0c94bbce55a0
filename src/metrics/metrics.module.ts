import { Global, Module } from '@nestjs/common';
import { DispatchModule } from '../dispatch/dispatch.module.js';
import { MetricsCollector } from './metrics.collector.js';
import { MetricsController } from './metrics.controller.js';
import { MetricsRepository } from './metrics.repository.js';
import { MetricsService } from './metrics.service.js';

/** Global so the dispatcher can record into MetricsService without importing this module. */
@Global()
@Module({
  imports: [DispatchModule],
  controllers: [MetricsController],
  providers: [MetricsService, MetricsRepository, MetricsCollector],
  exports: [MetricsService],
})
export class MetricsModule {}
