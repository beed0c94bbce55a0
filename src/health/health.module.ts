import { Module } from '@nestjs/common';
import { DispatchModule } from '../dispatch/dispatch.module.js';
import { HealthController } from './health.controller.js';
import { HealthRepository } from './health.repository.js';
import { HealthService } from './health.service.js';

@Module({
  imports: [DispatchModule],
  controllers: [HealthController],
  providers: [HealthRepository, HealthService],
})
export class HealthModule {}
