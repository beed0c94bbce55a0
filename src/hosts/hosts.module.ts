import { Module } from '@nestjs/common';
import { HostController } from './host.controller.js';
import { HostRepository } from './host.repository.js';
import { HostService } from './host.service.js';

@Module({
  controllers: [HostController],
  providers: [HostRepository, HostService],
  exports: [HostRepository],
})
export class HostsModule {}
