import { Injectable } from '@nestjs/common';
import { TaskKinds } from '../tasks/task-kinds.js';
import { retryBatchChunk } from './batch-retry.sql.js';

/** A batch retry's task (`POST /v1/batches/{id}/retry`), registered with the task engine as the app is assembled. */
@Injectable()
export class BatchRetryTaskKind {
  constructor(kinds: TaskKinds) {
    kinds.register('batch.retry', { chunk: (t, size) => retryBatchChunk(t.id, t.batchId!, t.statuses ?? [], size), makesDue: true });
  }
}
