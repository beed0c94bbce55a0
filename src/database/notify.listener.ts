import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import pg from 'pg';
import { DATABASE_TARGET, type DatabaseTarget } from './database.target.js';

/**
 * Channel notified (once per ingest transaction, never per row) when work is due.
 * Its payload is the highest priority (smallest number: 0 high, 1 normal, 2 low) of
 * what came due, or empty when unknown (any priority).
 */
export const DUE_CHANNEL = 'callback_due';

/** A notification's priority: what its payload names, or 0 (high: any priority) when it names none. */
export function duePriority(payload: string | undefined): number {
  const p = Number.parseInt(payload ?? '', 10);
  return Number.isInteger(p) && p >= 0 ? p : 0;
}

/**
 * Holds one dedicated connection in LISTEN mode (Prisma cannot LISTEN), so the
 * dispatcher wakes within milliseconds of a commit instead of at the next heartbeat.
 * Reconnects with backoff when Postgres goes away; the heartbeat covers the gap.
 */
@Injectable()
export class NotifyListener implements OnModuleDestroy {
  private readonly logger = new Logger(NotifyListener.name);
  private client?: pg.Client;
  private handlers: Array<(priority: number) => void> = [];
  private closed = false;
  private retryTimer?: NodeJS.Timeout;
  private retryMs = 100;

  private readonly databaseUrl: string;

  /** On the direct URL: this needs a session of its own (database.target.ts). */
  constructor(@Inject(DATABASE_TARGET) target: DatabaseTarget) {
    this.databaseUrl = target.directUrl;
  }

  /** Starts listening; `handler` runs on every notification, with the priority it names (duePriority). */
  async listen(handler: (priority: number) => void): Promise<void> {
    this.handlers.push(handler);
    if (!this.client) await this.connect();
  }

  get connected(): boolean {
    return this.client !== undefined;
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.databaseUrl, connectionTimeoutMillis: 5000 });
    client.on('notification', (message) => this.handlers.forEach((h) => h(duePriority(message.payload))));
    client.on('error', (error) => this.reconnectLater(client, error));
    client.on('end', () => this.reconnectLater(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${DUE_CHANNEL}`);
      this.client = client;
      this.retryMs = 100;
      // Anything committed while we were away was missed: wake up once to look.
      this.handlers.forEach((h) => h(0));
    } catch (error) {
      this.reconnectLater(client, error as Error);
    }
  }

  private reconnectLater(client: pg.Client, error?: Error): void {
    if (this.client === client) this.client = undefined;
    client.removeAllListeners('end');
    client.end().catch(() => undefined); // the connection is broken already; a new one follows
    if (this.closed || this.retryTimer) return;
    if (error) this.logger.warn(`LISTEN connection lost (${error.message}); retrying in ${this.retryMs} ms`);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.connect();
    }, this.retryMs);
    this.retryMs = Math.min(this.retryMs * 2, 5000);
  }

  async onModuleDestroy(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = undefined;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined); // shutting down: a broken connection is as good as closed
    }
  }
}
