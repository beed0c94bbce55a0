import type { TaskDto } from './dto/task.dto.js';
import type { TaskRow } from './task.repository.js';

export const toTaskView = (t: TaskRow): TaskDto => ({
  id: t.id,
  kind: t.kind,
  status: t.status,
  receiver: t.receiverName,
  batchId: t.batchId,
  done: t.done,
  createdAt: t.createdAt.toISOString(),
  updatedAt: t.updatedAt.toISOString(),
  finishedAt: t.finishedAt?.toISOString() ?? null,
});
