import { Injectable } from '@nestjs/common';
import { completeBatches, openBatchesWithNothingLeft } from '../batches/batch-completion.sql.js';
import { DispatchDatabase } from '../database/dispatch-database.js';
import { holdReceiverCallbacks } from '../receivers/receiver-hold.sql.js';
import { deleteExpiredSecrets } from '../signing/secret.sql.js';
import { reapExpiredLeases } from './sql/lease.sql.js';
import { disableFailingReceivers } from './sql/receiver.sql.js';
import { nowSql } from './sql/time.sql.js';

/** The maintenance leader's statements on the dispatch pool. */
@Injectable()
export class MaintenanceRepository {
  constructor(private readonly db: DispatchDatabase) {}

  /** Rows whose lease ran out (their worker died), their attempt counted: due now, or failed when it was their last. */
  async reapExpiredLeases(now?: Date): Promise<{ due: number; failed: number }> {
    const rows = await this.db.query<{ id: string; failed: boolean }>(reapExpiredLeases(nowSql(now)));
    const failed = rows.filter((r) => r.failed).length;
    return { due: rows.length - failed, failed };
  }

  /** Stamps up to `limit` open batches with nothing left (their last write-back died before the stamp). */
  async sweepCompletedBatches(limit: number): Promise<Array<{ id: string; completedAt: Date }>> {
    const open = await this.db.query<{ id: string }>(openBatchesWithNothingLeft(limit));
    if (open.length === 0) return [];
    return this.db.query(completeBatches(open.map((b) => b.id)));
  }

  /** Deletes up to `limit` signing secrets past their overlap period; returns how many. */
  deleteExpiredSecrets(limit: number): Promise<number> {
    return this.db.execute(deleteExpiredSecrets(limit));
  }

  /** Disables receivers failing for `hours` and holds their callbacks, in one transaction; returns them. */
  disableFailingReceivers(hours: number, reason: string): Promise<Array<{ id: string; apiKeyId: string; name: string; failingSince: Date }>> {
    return this.db.transaction(async (tx) => {
      const rows = await tx.query<{ id: string; apiKeyId: string; name: string; failingSince: Date }>(disableFailingReceivers(hours, reason));
      if (rows.length > 0)
        await tx.execute(
          holdReceiverCallbacks(
            rows.map((r) => r.id),
            true,
          ),
        );
      return rows;
    });
  }
}
