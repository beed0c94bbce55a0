import { Injectable } from '@nestjs/common';
import type { TaskKind } from '../model/states.js';
import type { Prisma } from '../generated/prisma/client.js';
import type { ChunkSize } from './task.sql.js';

/** What a chunk needs to know of its task: read once, unlocked (it never changes). */
export interface TaskTarget {
  id: string;
  kind: TaskKind;
  receiverId: string | null;
  batchId: string | null;
  statuses: string[] | null;
}

/** A kind of task, as the feature that owns it registers it. */
export interface TaskKindSpec {
  /** The statement of one chunk of up to `size` callbacks (task.sql.ts says what every chunk statement does). */
  chunk(task: TaskTarget, size: ChunkSize): Prisma.Sql | Promise<Prisma.Sql>;
  /** Whether its chunks make callbacks due (a release, a re-send): the workers are woken when a chunk changed any. */
  makesDue: boolean;
}

/**
 * The kinds of task this process runs. The engine (TaskRepository, TaskRunner) knows
 * none of them: each feature registers its own when the app is assembled
 * (ReceiverTaskKinds, BatchRetryTaskKind, RecoveryTaskKind), so a feature's chunk
 * statements live in its own folder.
 */
@Injectable()
export class TaskKinds {
  private readonly kinds = new Map<TaskKind, TaskKindSpec>();

  register(kind: TaskKind, spec: TaskKindSpec): void {
    if (this.kinds.has(kind)) throw new Error(`task kind ${kind} is registered twice`);
    this.kinds.set(kind, spec);
  }

  of(kind: TaskKind): TaskKindSpec {
    const spec = this.kinds.get(kind);
    if (!spec) throw new Error(`task kind ${kind} is not registered in this process`);
    return spec;
  }
}
