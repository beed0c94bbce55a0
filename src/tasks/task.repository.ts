import { Injectable } from '@nestjs/common';
import { TASK_STATUS, type TaskKind, type TaskStatus } from '../model/states.js';
import { ApiDatabase } from '../database/api-database.js';
import { Prisma } from '../generated/prisma/client.js';
import { TaskDatabase } from './task-database.js';
import { TaskKinds, type TaskTarget } from './task-kinds.js';
import type { ChunkSize } from './task.sql.js';

export interface TaskRow {
  id: string;
  apiKeyId: string;
  kind: TaskKind;
  status: TaskStatus;
  receiverId: string | null;
  receiverName: string | null;
  batchId: string | null;
  done: number;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

/** What one chunk did: none ran (`ran` false) when the task had ended or another runner held it. */
export interface ChunkResult {
  ran: boolean;
  finished: boolean;
  changed: number;
  kind?: TaskKind;
  /** How long the chunk's statement had run on the server when it answered (its row locks last that long, and its commit): task.sql.ts answer. */
  ms: number;
}

const SELECT_TASK = Prisma.sql`
  SELECT t.id, t.api_key_id AS "apiKeyId", t.kind, t.status, t.receiver_id AS "receiverId",
         (SELECT r.name FROM receiver r WHERE r.id = t.receiver_id AND r.deleted_at IS NULL) AS "receiverName",
         t.batch_id AS "batchId", t.done, t.created_at AS "createdAt", t.updated_at AS "updatedAt", t.finished_at AS "finishedAt"
  FROM task t`;

/**
 * A new task, written in the transaction of the change it carries out (the receiver
 * flipped, marked deleted, or the batch to retry): the change and the promise to
 * finish it commit together.
 */
export const insertTask = (t: { id: string; apiKeyId: string; kind: TaskKind; receiverId?: string; batchId?: string; statuses?: string[] }) => Prisma.sql`
  INSERT INTO task (id, api_key_id, kind, receiver_id, batch_id, statuses)
  VALUES (${t.id}::uuid, ${t.apiKeyId}::uuid, ${t.kind}, ${t.receiverId ?? null}::uuid, ${t.batchId ?? null}::uuid, ${t.statuses ?? null}::text[])`;

/**
 * The receiver's running tasks, ended as superseded: a later disable, enable or
 * delete takes over (each of its chunks does what the receiver is now). Run after
 * locking the receiver's row (a chunk locks it FOR SHARE before the task's row, so
 * the order is always receiver, then task).
 */
export const supersedeReceiverTasks = (receiverId: string) => Prisma.sql`
  UPDATE task SET status = ${TASK_STATUS.superseded}, finished_at = now(), updated_at = now()
  WHERE receiver_id = ${receiverId}::uuid AND status = ${TASK_STATUS.running}`;

@Injectable()
export class TaskRepository {
  constructor(
    private readonly db: ApiDatabase,
    private readonly chunks: TaskDatabase,
    private readonly kinds: TaskKinds,
  ) {}

  /** A task on its own (a batch retry: nothing else changes in its transaction). */
  async createTask(t: Parameters<typeof insertTask>[0]): Promise<void> {
    await this.db.execute(insertTask(t));
  }

  async findTask(apiKeyId: string, id: string): Promise<TaskRow | undefined> {
    const [row] = await this.db.query<TaskRow>(Prisma.sql`${SELECT_TASK} WHERE t.id = ${id}::uuid AND t.api_key_id = ${apiKeyId}::uuid`);
    return row;
  }

  /** The receiver's latest task still running, if any (`task_receiver_idx`). */
  async runningTaskOfReceiver(receiverId: string): Promise<TaskRow | undefined> {
    const [row] = await this.db.query<TaskRow>(Prisma.sql`
      ${SELECT_TASK} WHERE t.receiver_id = ${receiverId}::uuid AND t.status = ${TASK_STATUS.running}
      ORDER BY t.created_at DESC LIMIT 1`);
    return row;
  }

  /** Deletes up to `limit` tasks finished more than `hours` ago (`task_finished_idx`); returns how many. */
  purgeFinished(hours: number, limit: number): Promise<number> {
    return this.db.execute(Prisma.sql`
      DELETE FROM task WHERE id = ANY(ARRAY(
        SELECT id FROM task WHERE finished_at < now() - ${hours}::float8 * interval '1 hour' ORDER BY finished_at LIMIT ${limit}))`);
  }

  /** Running tasks no chunk moved for `idleMs` (their runner stopped): `task_open_idx`. */
  async idleTasks(idleMs: number, limit: number): Promise<string[]> {
    const rows = await this.db.query<{ id: string }>(Prisma.sql`
      SELECT id FROM task WHERE status = ${TASK_STATUS.running} AND updated_at < now() - ${idleMs}::int * interval '1 millisecond'
      ORDER BY updated_at LIMIT ${limit}`);
    return rows.map((r) => r.id);
  }

  /**
   * One chunk of the task, of up to `size` callbacks: one statement of its kind's
   * (TaskKinds) on the tasks' own connections (TaskDatabase: chunkSettings). What the
   * task is (its kind, receiver or batch) never changes, so it is read first, without a lock.
   */
  async runChunk(id: string, size: ChunkSize): Promise<ChunkResult> {
    const [task] = await this.db.query<TaskTarget>(Prisma.sql`
      SELECT id, kind, receiver_id AS "receiverId", batch_id AS "batchId", statuses FROM task WHERE id = ${id}::uuid`);
    if (!task) return { ran: false, finished: true, changed: 0, ms: 0 };
    const [r] = await this.chunks.query<{ ran: boolean; finished: boolean; changed: number; ms: number }>(await this.kinds.of(task.kind).chunk(task, size));
    return { ...r, kind: task.kind };
  }
}
