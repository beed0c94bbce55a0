import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import pg from 'pg';
import { AppConfig } from '../config/app.config.js';
import { DATABASE_TARGET, type DatabaseTarget } from '../database/database.target.js';
import { holdsLeaderLock, leaderUnlock, lockSessionSettings, tryLeaderLock } from './sql/leader.sql.js';

/**
 * The lock's timings, all from LEADER_LOCK_TIMEOUT_MS (`idleMs`): Postgres ends the
 * lock's session after `idleMs` without a statement from it (`idle_session_timeout`),
 * and the lock goes with it: a leader cut off from the database (a network
 * partition, a pooler or proxy that stopped forwarding, a frozen process), which
 * Postgres cannot tell from an idle one, loses the lock that long after its last
 * statement reached the server.
 */
export interface LeaderTimings {
  idleMs: number;
  /**
   * A leader whose lock was last confirmed (the confirming statement sent) this long
   * ago stops leading, before any other worker can take the lock: that is at least
   * `idleMs` after the same statement was sent.
   */
  confirmedForMs: number;
  /** The lock's session confirms the lock at least this often while it leads (so it is never idle `idleMs`). */
  heartbeatMs: number;
  /** A statement on the lock's session not answered within this means the connection is cut: it is dropped. */
  queryTimeoutMs: number;
}

export const leaderTimings = (idleMs: number): LeaderTimings => ({
  idleMs,
  confirmedForMs: Math.round(idleMs * 0.6),
  heartbeatMs: Math.round(idleMs * 0.2),
  queryTimeoutMs: Math.round(idleMs * 0.3),
});

/**
 * The maintenance leader election: one dedicated connection per worker, on which the
 * worker tries the lock (sql/leader.sql.ts) whenever it is not the leader.
 * Fencing: the leader confirms it holds the lock before each maintenance task and every
 * `heartbeatMs`, and leads only while its last confirmation was sent less than
 * `confirmedForMs` ago, while Postgres frees the lock of a cut-off session no sooner than
 * `idleMs` after that confirmation arrived: the old leader stops `idleMs - confirmedForMs`
 * before a new one can start, and a new one leads within `idleMs` plus one reaper
 * interval (DISPATCH_POLL_MS) of the cut; within one reaper interval when the process
 * dies or the connection breaks outright (ARCHITECTURE.md, "Leader fencing").
 */
@Injectable()
export class LeaderLock implements OnApplicationShutdown {
  private readonly logger = new Logger(LeaderLock.name);
  private client?: pg.Client;
  private held = false;
  /** performance.now() when the last confirmation that the lock is held was sent. */
  private confirmedAt = 0;
  private trying?: Promise<boolean>;
  private confirming?: Promise<boolean>;
  private readonly heartbeat: NodeJS.Timeout;

  private readonly databaseUrl: string;
  private readonly timings: LeaderTimings;

  /** On the direct URL: this needs a session of its own (database.target.ts). */
  constructor(@Inject(DATABASE_TARGET) target: DatabaseTarget, config: AppConfig) {
    this.databaseUrl = target.directUrl;
    this.timings = leaderTimings(config.leaderLockTimeoutMs);
    this.heartbeat = setInterval(() => {
      if (this.held) void this.confirm();
    }, this.timings.heartbeatMs).unref();
  }

  /**
   * Whether this worker leads now: while it holds the lock, a confirmation that it
   * still does (see the class); else one attempt to take it. Throws when the
   * database is away.
   */
  async lead(): Promise<boolean> {
    if (this.held && this.client && (await this.confirm())) return true;
    this.trying ??= this.tryTake().finally(() => (this.trying = undefined));
    return this.trying;
  }

  /** Whether the lock was confirmed recently enough to lead on (no round trip): for a long task to check between its steps. */
  stillLeads(): boolean {
    return this.held && performance.now() - this.confirmedAt < this.timings.confirmedForMs;
  }

  private confirm(): Promise<boolean> {
    this.confirming ??= this.confirmOnce().finally(() => (this.confirming = undefined));
    return this.confirming;
  }

  private async confirmOnce(): Promise<boolean> {
    const client = this.client;
    if (!client) return false;
    const sentAt = performance.now();
    try {
      const { rows } = await this.query<{ held: boolean }>(client, holdsLeaderLock());
      if (rows[0]?.held !== true) throw new Error('the session no longer holds the lock');
      if (this.client !== client) return false;
      this.confirmedAt = sentAt;
      return this.stillLeads();
    } catch (error) {
      this.lose(client, `maintenance lock not confirmed (${(error as Error).message}); this worker stops leading`);
      return false;
    }
  }

  private async tryTake(): Promise<boolean> {
    const client = this.client ?? (await this.connect());
    const sentAt = performance.now();
    const { rows } = await this.query<{ held: boolean }>(client, tryLeaderLock());
    if (this.client !== client) return false;
    this.held = rows[0]?.held === true;
    if (this.held) {
      this.confirmedAt = sentAt;
      this.logger.log({ msg: 'this worker now leads maintenance (lease reaper, batch sweep, retention, tasks)', event: 'leader_started' });
    }
    return this.held;
  }

  /** One statement on the lock's session, given up (and the connection dropped) past `queryTimeoutMs`. */
  private async query<R extends pg.QueryResultRow>(client: pg.Client, statement: { text: string; values: unknown[] }): Promise<pg.QueryResult<R>> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${this.timings.queryTimeoutMs} ms`)), this.timings.queryTimeoutMs);
    });
    try {
      return await Promise.race([client.query<R>(statement.text, statement.values), timeout]);
    } catch (error) {
      this.lose(client, `maintenance lock connection: ${(error as Error).message}`);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Drops the lock's connection: this worker no longer leads (Postgres frees the lock when it ends the session). */
  private lose(client: pg.Client, why: string): void {
    if (this.client !== client) return;
    if (this.held) this.logger.warn({ msg: `${why}; another worker may lead once Postgres ends this session`, event: 'leader_stopped' });
    this.client = undefined;
    this.held = false;
    client.end().catch(() => undefined); // the connection is lost already
  }

  private async connect(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: this.databaseUrl, connectionTimeoutMillis: 5000, keepAlive: true, keepAliveInitialDelayMillis: 5000 });
    const lost = () => this.lose(client, 'maintenance lock connection lost');
    client.on('error', lost);
    client.on('end', lost);
    try {
      await client.connect();
      this.client = client;
      await this.query(client, { text: lockSessionSettings(this.timings.idleMs), values: [] });
    } catch (error) {
      this.client = undefined;
      client.end().catch(() => undefined); // never ready; the connect error is thrown
      throw error;
    }
    return client;
  }

  /** Gives up the lead (so another worker takes it at once) and closes the connection. */
  async release(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    if (this.held) {
      // closing the connection next releases the lock anyway
      await this.query(client, leaderUnlock()).catch(() => undefined);
    }
    this.held = false;
    // a broken connection is as good as closed; one cut off may never answer the goodbye
    await Promise.race([client.end().catch(() => undefined), new Promise((r) => setTimeout(r, this.timings.queryTimeoutMs).unref())]);
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.heartbeat);
    await this.release();
  }
}
