import { DynamicModule, Global, Module } from '@nestjs/common';
import { ApiDatabase } from './api-database.js';
import { DispatchDatabase } from './dispatch-database.js';
import { DueNotifier } from './due.notifier.js';
import { NotifyListener } from './notify.listener.js';
import { DATABASE_TARGET, type DatabaseTarget } from './database.target.js';
import { PrismaService } from './prisma.service.js';
import { ReadReplica } from './read-replica.js';

@Global()
@Module({})
export class DatabaseModule {
  static forTarget(target: DatabaseTarget): DynamicModule {
    return {
      module: DatabaseModule,
      providers: [{ provide: DATABASE_TARGET, useValue: target }, PrismaService, ApiDatabase, ReadReplica, DispatchDatabase, NotifyListener, DueNotifier],
      exports: [DATABASE_TARGET, PrismaService, ApiDatabase, ReadReplica, DispatchDatabase, NotifyListener, DueNotifier],
    };
  }
}
