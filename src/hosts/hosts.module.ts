import { Module } from '@nestjs/common';
import { HostController } from './host.controller.js';
import { HostRepository } from './host.repository.js';
import { HostService } from './host.service.js';
import { HostLimitsRepository } from './limits/host-limits.repository.js';
import { HostLimitsService } from './limits/host-limits.service.js';

/**
 * Destinations: the API side (`GET /v1/hosts`, overrides: host.controller.ts) and the
 * worker side (`limits/`: each host's breaker and its keys', fed by the sender's
 * results, and the 410 Gone URLs), which the claim enforces through the host rows.
 */
@Module({
  controllers: [HostController],
  providers: [HostRepository, HostService, HostLimitsRepository, HostLimitsService],
  exports: [HostRepository, HostLimitsRepository, HostLimitsService],
})
export class HostsModule {}
