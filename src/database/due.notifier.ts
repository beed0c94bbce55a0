import { Injectable } from '@nestjs/common';
import { CaughtErrors } from '../logging/caught-errors.js';
import { DUE_CHANNEL } from './notify.listener.js';
import { Prisma } from '../generated/prisma/client.js';
import { ApiDatabase } from './api-database.js';

/**
 * Sends the "work is due" NOTIFY after an ingest committed, coalesced: while one
 * NOTIFY is on its way, any number of further requests become one more NOTIFY
 * after it. A NOTIFY inside the ingest transaction would make every ingest commit
 * queue on Postgres's global notify lock (one fsync after another: ~100 one-callback
 * batches/s measured with `npm run bench:ingest`). A lost NOTIFY (crash between
 * commit and send, database away) only delays work until the next heartbeat.
 *
 * The payload is the highest priority of what came due since the last NOTIFY went
 * (DUE_CHANNEL): a worker holding claimed rows of a lower one in memory then looks
 * for due rows that should pass them (ProducerService).
 */
@Injectable()
export class DueNotifier {
  private sending?: Promise<void>;
  /** Highest priority (smallest number) asked for since the NOTIFY under way was sent; undefined: none asked. */
  private again?: number;

  constructor(
    private readonly db: ApiDatabase,
    private readonly caught: CaughtErrors,
  ) {}

  /** `priority`: the highest (smallest) of what came due; 0 when unknown. */
  notifyDue(priority = 0): void {
    if (this.sending) {
      this.again = Math.min(this.again ?? priority, priority);
      return;
    }
    this.sending = this.send(priority).finally(() => {
      this.sending = undefined;
      const again = this.again;
      this.again = undefined;
      if (again !== undefined) this.notifyDue(again);
    });
  }

  /** Resolves once no NOTIFY is on its way (for shutdown and tests). */
  async settled(): Promise<void> {
    while (this.sending) await this.sending;
  }

  private async send(priority: number): Promise<void> {
    try {
      await this.db.execute(Prisma.sql`SELECT pg_notify(${DUE_CHANNEL}, ${String(priority)})`);
    } catch (error) {
      this.caught.record('due_notify', error, "the workers' heartbeat finds the work (within DISPATCH_POLL_MS)");
    }
  }
}
