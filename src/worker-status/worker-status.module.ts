import { Module } from '@nestjs/common';
import { WorkerStatus } from './worker-status.service.js';

@Module({ providers: [WorkerStatus], exports: [WorkerStatus] })
export class WorkerStatusModule {}
