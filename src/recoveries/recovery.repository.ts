import { Injectable } from '@nestjs/common';
import { TASK_STATUS, type Recoverable, type TaskStatus } from '../model/states.js';
import { ApiDatabase } from '../database/api-database.js';
import { Prisma } from '../generated/prisma/client.js';
import { insertTask } from '../tasks/task.repository.js';
import { countRecoverable, recoveryProgress, type RecoveryFilter } from './recovery.sql.js';

export interface RecoveryRow {
  id: string;
  taskStatus: TaskStatus;
  receiverName: string | null;
  host: string | null;
  batchId: string | null;
  statuses: Recoverable[];
  since: Date | null;
  until: Date;
  priority: number;
  matched: number;
  requeued: number;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

@Injectable()
export class RecoveryRepository {
  constructor(private readonly db: ApiDatabase) {}

  async countMatching(f: RecoveryFilter, statuses: Recoverable[]): Promise<number> {
    const [row] = await this.db.query<{ n: number }>(countRecoverable(f, statuses));
    return row.n;
  }

  /** The batch of the key's event (its deliveries' batch) by the event's id (`event_api_key_id_event_id_key`). */
  async batchOfEvent(apiKeyId: string, eventId: string): Promise<string | undefined> {
    const [row] = await this.db.query<{ batchId: string }>(Prisma.sql`
      SELECT batch_id AS "batchId" FROM event WHERE api_key_id = ${apiKeyId}::uuid AND event_id = ${eventId}`);
    return row?.batchId;
  }

  async batchExists(apiKeyId: string, batchId: string): Promise<boolean> {
    const rows = await this.db.query(Prisma.sql`SELECT 1 FROM batch WHERE id = ${batchId}::uuid AND api_key_id = ${apiKeyId}::uuid`);
    return rows.length > 0;
  }

  /** The recovery and its task (kind recovery, same id, its statuses still to walk) in one transaction: both or neither. */
  async insertRecovery(id: string, f: RecoveryFilter, statuses: Recoverable[], matched: number): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.execute(insertTask({ id, apiKeyId: f.apiKeyId, kind: 'recovery', statuses }));
      await tx.execute(Prisma.sql`
        INSERT INTO recovery (id, api_key_id, receiver_id, host, batch_id, statuses, since, until, priority, matched)
        VALUES (${id}::uuid, ${f.apiKeyId}::uuid, ${f.receiverId}::uuid, ${f.host}, ${f.batchId}::uuid, ${statuses}::text[],
                ${f.since}::timestamptz, ${f.until}::timestamptz, ${f.priority}::smallint, ${matched}::int)`);
    });
  }

  async findRecovery(apiKeyId: string, id: string): Promise<RecoveryRow | undefined> {
    const [row] = await this.db.query<RecoveryRow>(Prisma.sql`
      SELECT r.id, t.status AS "taskStatus",
             (SELECT v.name FROM receiver v WHERE v.id = r.receiver_id AND v.deleted_at IS NULL) AS "receiverName",
             r.host, r.batch_id AS "batchId", r.statuses, r.since, r.until, r.priority, r.matched, t.done AS requeued,
             t.created_at AS "createdAt", t.updated_at AS "updatedAt", t.finished_at AS "finishedAt"
      FROM recovery r JOIN task t ON t.id = r.id
      WHERE r.id = ${id}::uuid AND r.api_key_id = ${apiKeyId}::uuid`);
    return row;
  }

  /** The recovery's filter, as its task's chunks read it (recoveryChunk); its times as the JSON text of the stored values. */
  async filterOf(id: string): Promise<RecoveryFilter> {
    const [row] = await this.db.query<{ f: RecoveryFilter }>(Prisma.sql`
      SELECT json_build_object('apiKeyId', api_key_id, 'receiverId', receiver_id, 'host', host, 'batchId', batch_id, 'priority', priority,
                               'since', since, 'until', until) AS f
      FROM recovery WHERE id = ${id}::uuid`);
    if (!row) throw new Error(`recovery ${id} has a task but no row`);
    return row.f;
  }

  /** Its requeued callbacks by status now. */
  async progress(id: string): Promise<Map<string, number>> {
    const rows = await this.db.query<{ status: string; n: number }>(recoveryProgress(id));
    return new Map(rows.map((r) => [r.status, r.n]));
  }

  /**
   * Ends a running recovery's task as cancelled; false when it was not running. Waits
   * for a chunk under way (which holds the task's row), so no chunk starts after.
   */
  async cancelRecovery(apiKeyId: string, id: string): Promise<boolean> {
    const n = await this.db.execute(Prisma.sql`
      UPDATE task SET status = ${TASK_STATUS.cancelled}, finished_at = now(), updated_at = now()
      WHERE id = ${id}::uuid AND api_key_id = ${apiKeyId}::uuid AND kind = 'recovery' AND status = ${TASK_STATUS.running}`);
    return n > 0;
  }
}
