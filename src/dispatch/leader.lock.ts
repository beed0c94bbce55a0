import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import pg from 'pg';
import { DATABASE_TARGET, type DatabaseTarget } from '../database/database.target.js';
import { leaderUnlock, tryLeaderLock } from './sql/leader.sql.js';

/**
 * The maintenance leader election: one dedicated connection per worker, on which
 * the worker tries the lock (sql/leader.sql.ts) whenever it is not the leader. The
 * leader keeps the lock as long as its session lives; when the process dies or the
 * connection breaks, Postgres ends the session, the lock goes, and the next worker
 * to try becomes leader (within one reaper interval).
 */
@Injectable()
export class LeaderLock implements OnApplicationShutdown {
  private readonly logger = new Logger(LeaderLock.name);
  private client?: pg.Client;
  private held = false;
  private trying?: Promise<boolean>;

  private readonly databaseUrl: string;

  /** On the direct URL: this needs a session of its own (database.target.ts). */
  constructor(@Inject(DATABASE_TARGET) target: DatabaseTarget) {
    this.databaseUrl = target.directUrl;
  }

  /** Whether this worker leads now: true while it holds the lock, else one attempt to take it. Throws when the database is away. */
  lead(): Promise<boolean> {
    if (this.held && this.client) return Promise.resolve(true);
    this.trying ??= this.tryTake().finally(() => (this.trying = undefined));
    return this.trying;
  }

  private async tryTake(): Promise<boolean> {
    const client = this.client ?? (await this.connect());
    const { text, values } = tryLeaderLock();
    const { rows } = await client.query<{ held: boolean }>(text, values);
    this.held = rows[0]?.held === true;
    if (this.held) this.logger.log('this worker now leads maintenance (lease reaper, batch sweep, retention)');
    return this.held;
  }

  private async connect(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: this.databaseUrl, connectionTimeoutMillis: 5000 });
    const lost = () => {
      if (this.client !== client) return;
      if (this.held) this.logger.warn('maintenance lock connection lost; another worker may lead now');
      this.client = undefined;
      this.held = false;
      client.end().catch(() => undefined); // the connection is lost already
    };
    client.on('error', lost);
    client.on('end', lost);
    try {
      await client.connect();
    } catch (error) {
      client.end().catch(() => undefined); // never connected; the connect error is thrown
      throw error;
    }
    this.client = client;
    return client;
  }

  /** Gives up the lead (so another worker takes it at once) and closes the connection. */
  async release(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    if (this.held) {
      const { text, values } = leaderUnlock();
      await client.query(text, values).catch(() => undefined); // closing the connection next releases the lock anyway
    }
    this.held = false;
    await client.end().catch(() => undefined); // a broken connection is as good as closed
  }

  async onApplicationShutdown(): Promise<void> {
    await this.release();
  }
}
