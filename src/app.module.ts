import { DynamicModule, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { AuthModule } from './auth/auth.module.js';
import { BatchesModule } from './batches/batches.module.js';
import { CallbacksModule } from './callbacks/callbacks.module.js';
import { CaughtErrorsModule } from './logging/caught-errors.js';
import { AppConfig } from './config/app.config.js';
import { ConfigModule } from './config/config.module.js';
import { DashboardModule } from './dashboard/dashboard.module.js';
import { DatabaseModule } from './database/database.module.js';
import type { DatabaseTarget } from './database/database.target.js';
import { DispatchModule } from './dispatch/dispatch.module.js';
import { EventsModule } from './events/events.module.js';
import { HealthModule } from './health/health.module.js';
import { HistoryModule } from './history/history.module.js';
import { HostsModule } from './hosts/hosts.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { OperatorEventsModule } from './operator-events/operator-events.module.js';
import { PortalModule } from './portal/portal.module.js';
import { RetentionModule } from './retention/retention.module.js';
import { ReceiversModule } from './receivers/receivers.module.js';
import { RecoveriesModule } from './recoveries/recoveries.module.js';
import { KeyringModule } from './config/keyring.module.js';
import type { SecretKeyring } from './config/secret-keyring.js';
import { SigningModule } from './signing/signing.module.js';
import { TasksModule } from './tasks/tasks.module.js';

@Module({})
export class AppModule {
  static register(config: AppConfig, target: DatabaseTarget, keyring: SecretKeyring): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forConfig(config),
        KeyringModule.forKeyring(keyring),
        CaughtErrorsModule.register(),
        DatabaseModule.forTarget(target),
        ScheduleModule.forRoot(),
        AuthModule,
        BatchesModule,
        CallbacksModule,
        HistoryModule,
        HostsModule,
        SigningModule,
        ReceiversModule,
        EventsModule,
        TasksModule,
        RecoveriesModule,
        OperatorEventsModule,
        DispatchModule,
        HealthModule,
        MetricsModule,
        RetentionModule,
        DashboardModule,
        PortalModule,
      ],
    };
  }
}
