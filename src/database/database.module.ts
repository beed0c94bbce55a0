import { DynamicModule, Global, Module } from '@nestjs/common';
import { ApiDatabase } from './api-database.js';
import { DispatchDatabase } from './dispatch-database.js';
import { DueNotifier } from './due.notifier.js';
import { NotifyListener } from './notify.listener.js';
import { DATABASE_URL, PrismaService } from './prisma.service.js';

@Global()
@Module({})
export class DatabaseModule {
  static forUrl(databaseUrl: string): DynamicModule {
    return {
      module: DatabaseModule,
      providers: [{ provide: DATABASE_URL, useValue: databaseUrl }, PrismaService, ApiDatabase, DispatchDatabase, NotifyListener, DueNotifier],
      exports: [DATABASE_URL, PrismaService, ApiDatabase, DispatchDatabase, NotifyListener, DueNotifier],
    };
  }
}
