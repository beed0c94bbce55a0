import { Injectable } from '@nestjs/common';
import { CaughtErrors } from '../common/caught-errors.js';
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
 */
@Injectable()
export class DueNotifier {
  private sending?: Promise<void>;
  private again = false;

  constructor(
    private readonly db: ApiDatabase,
    private readonly caught: CaughtErrors,
  ) {}

  notifyDue(): void {
    if (this.sending) {
      this.again = true;
      return;
    }
    this.sending = this.send().finally(() => {
      this.sending = undefined;
      if (this.again) {
        this.again = false;
        this.notifyDue();
      }
    });
  }

  /** Resolves once no NOTIFY is on its way (for shutdown and tests). */
  async settled(): Promise<void> {
    while (this.sending) await this.sending;
  }

  private async send(): Promise<void> {
    try {
      await this.db.execute(Prisma.sql`SELECT pg_notify(${DUE_CHANNEL}, '')`);
    } catch (error) {
      this.caught.record('due_notify', error, "the workers' heartbeat finds the work (within DISPATCH_POLL_MS)");
    }
  }
}
