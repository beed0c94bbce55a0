import { Injectable } from '@nestjs/common';
import { TaskKinds, type TaskTarget } from '../tasks/task-kinds.js';
import type { ChunkSize } from '../tasks/task.sql.js';
import { detachReceiverChunk, reconcileHeldChunk } from './receiver-tasks.sql.js';

/**
 * A receiver's tasks, registered with the task engine as the app is assembled (in
 * the constructor: before any lifecycle hook could run a task): a disable or enable
 * holds or releases its callbacks, a delete detaches them.
 */
@Injectable()
export class ReceiverTaskKinds {
  constructor(kinds: TaskKinds) {
    const reconcile = (t: TaskTarget, size: ChunkSize) => reconcileHeldChunk(t.id, t.receiverId!, size);
    kinds.register('receiver.disable', { chunk: reconcile, makesDue: false });
    kinds.register('receiver.enable', { chunk: reconcile, makesDue: true });
    kinds.register('receiver.delete', { chunk: (t, size) => detachReceiverChunk(t.id, t.receiverId!, size), makesDue: false });
  }
}
