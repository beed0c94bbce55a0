import { Injectable } from '@nestjs/common';
import { completeBatches, openBatchesWithNothingLeft } from '../queue/batch-completion.sql.js';
import { uuidv7 } from '../common/uuid.js';
import { AppConfig } from '../config/app.config.js';
import { DispatchDatabase } from '../database/dispatch-database.js';
import { settledRecoveries, toggledReceivers } from '../queue/operator-causes.sql.js';
import { operatorEventDefaults, type OperatorEventDefaults } from '../queue/operator-event.sql.js';
import { deleteExpiredSecrets } from '../signing/secret.sql.js';
import { insertTask, supersedeReceiverTasks } from '../tasks/task.repository.js';
import { reapExpiredLeases } from './sql/lease.sql.js';
import { disableFailingReceivers } from './sql/receiver.sql.js';
import { nowSql } from './sql/time.sql.js';

/** Expired leases a reaper statement takes at most. */
const REAP_CHUNK = 1000;

/** The maintenance leader's statements on the dispatch pool. */
@Injectable()
export class MaintenanceRepository {
  private readonly defaults: OperatorEventDefaults;

  constructor(
    private readonly db: DispatchDatabase,
    config: AppConfig,
  ) {
    this.defaults = operatorEventDefaults(config);
  }

  /**
   * Rows whose lease ran out (their worker died), their attempt counted: due now, or
   * failed when it was their last; REAP_CHUNK rows a statement, each its own
   * transaction, until a statement finds fewer.
   */
  async reapExpiredLeases(now?: Date): Promise<{ due: number; failed: number }> {
    let due = 0;
    let failed = 0;
    for (;;) {
      const rows = await this.db.query<{ id: string; failed: boolean }>(reapExpiredLeases(nowSql(now), REAP_CHUNK, this.defaults));
      const f = rows.filter((r) => r.failed).length;
      failed += f;
      due += rows.length - f;
      if (rows.length < REAP_CHUNK) return { due, failed };
    }
  }

  /** Stamps up to `limit` open batches with nothing left (their last write-back died before the stamp). */
  async sweepCompletedBatches(limit: number): Promise<Array<{ id: string; completedAt: Date }>> {
    const open = await this.db.query<{ id: string }>(openBatchesWithNothingLeft(limit));
    if (open.length === 0) return [];
    return this.db.query(
      completeBatches(
        open.map((b) => b.id),
        this.defaults,
      ),
    );
  }

  /** Deletes up to `limit` signing secrets past their overlap period; returns how many. */
  deleteExpiredSecrets(limit: number): Promise<number> {
    return this.db.execute(deleteExpiredSecrets(limit));
  }

  /**
   * Disables receivers failing for `hours` and starts for each the task that holds
   * its callbacks (`receiver.disable`), and stores their receiver.disabled operator
   * events, in one transaction; returns them with their tasks' ids.
   */
  disableFailingReceivers(hours: number, reason: string): Promise<Array<{ id: string; apiKeyId: string; name: string; failingSince: Date; taskId: string }>> {
    return this.db.transaction(async (tx) => {
      const rows = await tx.query<{ id: string; apiKeyId: string; name: string; failingSince: Date }>(disableFailingReceivers(hours, reason));
      const disabled = [];
      for (const r of rows) {
        const taskId = uuidv7();
        await tx.execute(supersedeReceiverTasks(r.id));
        await tx.execute(insertTask({ id: taskId, apiKeyId: r.apiKeyId, kind: 'receiver.disable', receiverId: r.id }));
        disabled.push({ ...r, taskId });
      }
      if (rows.length > 0)
        await tx.query(
          toggledReceivers(
            rows.map((r) => r.id),
            true,
            true,
            this.defaults,
          ),
        );
      return disabled;
    });
  }

  /** Stamps settled recoveries and stores their recovery.completed events (settledRecoveries); returns how many events. */
  async notifySettledRecoveries(): Promise<number> {
    const [r] = await this.db.query<{ stamped: number; events: number }>(settledRecoveries(this.defaults));
    return r.events;
  }
}
