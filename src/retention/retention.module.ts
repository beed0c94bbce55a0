import { Module } from '@nestjs/common';
import { MetricsModule } from '../metrics/metrics.module.js';
import { PartitionRepository } from './partition.repository.js';
import { RetentionRepository } from './retention.repository.js';
import { RetentionService } from './retention.service.js';

@Module({
  imports: [MetricsModule],
  providers: [RetentionRepository, PartitionRepository, RetentionService],
  exports: [RetentionService],
})
export class RetentionModule {}
