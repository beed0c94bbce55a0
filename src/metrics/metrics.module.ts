import { Module } from '@nestjs/common';
import { HealthModule } from '../health/health.module.js';
import { WorkerStatusModule } from '../worker-status/worker-status.module.js';
import { MetricsCollector } from './metrics.collector.js';
import { MetricsController } from './metrics.controller.js';
import { MetricsRepository } from './metrics.repository.js';
import { MetricsService } from './metrics.service.js';

@Module({
  imports: [WorkerStatusModule, HealthModule],
  controllers: [MetricsController],
  providers: [MetricsService, MetricsRepository, MetricsCollector],
  exports: [MetricsService],
})
export class MetricsModule {}
