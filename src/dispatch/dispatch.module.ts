import { HttpService } from '@nestjs/axios';
import { Module } from '@nestjs/common';
import { HostsModule } from '../hosts/hosts.module.js';
import { MetricsModule } from '../metrics/metrics.module.js';
import { RetentionModule } from '../retention/retention.module.js';
import { SigningModule } from '../signing/signing.module.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { TransformsModule } from '../transforms/transforms.module.js';
import { WorkerStatusModule } from '../worker-status/worker-status.module.js';
import { ReceiverAuthModule } from '../receiver-auth/receiver-auth.module.js';
import { ReceiverTester } from '../receivers/receiver-tester.js';
import { ReceiversModule } from '../receivers/receivers.module.js';
import { ReceiverTestController } from './receiver-test.controller.js';
import { ReceiverTestService } from './receiver-test.service.js';
import { AuthorizedSender } from './auth/authorized.sender.js';
import { CredentialCache } from './auth/credential.cache.js';
import { TokenCache } from './auth/token.cache.js';
import { AttemptMaker } from './attempt.maker.js';
import { CallPreparation } from './call.preparation.js';
import { ClaimRepository } from './claim.repository.js';
import { CompleterService } from './completer.service.js';
import { LeaderLock } from './leader.lock.js';
import { MaintenanceRepository } from './maintenance.repository.js';
import { MaintenanceService } from './maintenance.service.js';
import { QueueMaintenance } from './queue.maintenance.js';
import { StoreMaintenance } from './store.maintenance.js';
import { OutcomeRepository } from './outcome.repository.js';
import { ProducerService } from './producer.service.js';
import { SenderService } from './sender.service.js';
import { TransformStep } from './transform.step.js';
import { dispatchAxios } from './transport/dispatch.axios.js';
import { HttpTransport } from './transport/http.transport.js';
import { WorkerService } from './worker.service.js';

/** The worker: see worker.service.ts for the roles and src/dispatch/README.md for the way of a row. */
@Module({
  imports: [HostsModule, SigningModule, MetricsModule, RetentionModule, WorkerStatusModule, TasksModule, TransformsModule, ReceiverAuthModule, ReceiversModule],
  controllers: [ReceiverTestController],
  providers: [
    { provide: HttpService, useFactory: () => new HttpService(dispatchAxios()) },
    HttpTransport,
    CredentialCache,
    TokenCache,
    AuthorizedSender,
    ClaimRepository,
    OutcomeRepository,
    MaintenanceRepository,
    LeaderLock,
    CompleterService,
    CallPreparation,
    ProducerService,
    AttemptMaker,
    SenderService,
    TransformStep,
    QueueMaintenance,
    StoreMaintenance,
    MaintenanceService,
    WorkerService,
    { provide: ReceiverTester, useClass: ReceiverTestService },
  ],
  // the test call, for the portal's "Send a test"
  exports: [ReceiverTester],
})
export class DispatchModule {}
