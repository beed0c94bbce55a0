import { HttpService } from '@nestjs/axios';
import { Module } from '@nestjs/common';
import { HostsModule } from '../hosts/hosts.module.js';
import { SigningModule } from '../signing/signing.module.js';
import { ClaimRepository } from './claim.repository.js';
import { DispatcherService } from './dispatcher.service.js';
import { HostLimitsService } from './host-limits.service.js';
import { OutcomeRepository } from './outcome.repository.js';
import { dispatchAxios, HttpTransport } from './transport/http.transport.js';

@Module({
  imports: [SigningModule, HostsModule],
  providers: [
    { provide: HttpService, useFactory: () => new HttpService(dispatchAxios()) },
    ClaimRepository,
    OutcomeRepository,
    HttpTransport,
    HostLimitsService,
    DispatcherService,
  ],
  exports: [DispatcherService],
})
export class DispatchModule {}
