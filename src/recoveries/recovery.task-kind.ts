import { Injectable } from '@nestjs/common';
import { TaskKinds } from '../tasks/task-kinds.js';
import { RecoveryRepository } from './recovery.repository.js';
import { recoveryChunk } from './recovery.sql.js';

/** A recovery's task (same id as the recovery), registered with the task engine as the app is assembled: each chunk reads the recovery's filter. */
@Injectable()
export class RecoveryTaskKind {
  constructor(kinds: TaskKinds, repo: RecoveryRepository) {
    kinds.register('recovery', { chunk: async (t, size) => recoveryChunk(t.id, await repo.filterOf(t.id), size), makesDue: true });
  }
}
