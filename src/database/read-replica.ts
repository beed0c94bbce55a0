import { HttpException, Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import type pg from 'pg';
import { AppError } from '../common/app.error.js';
import { CaughtErrors } from '../logging/caught-errors.js';
import { AppConfig } from '../config/app.config.js';
import { Prisma, PrismaClient } from '../generated/prisma/client.js';
import { ApiDatabase } from './api-database.js';
import { firstLine } from './database.errors.js';
import { withinMs } from '../common/within-ms.js';
import { DATABASE_TARGET, type DatabaseTarget } from './database.target.js';
import { answerWithinMs, openPool, PgStatements, timeoutSettings } from './pg.statements.js';
import { PrismaService } from './prisma.service.js';
import { statementNamer } from './statement.names.js';

/** What a read runs on: Prisma's model reads and the raw statements, on one server. */
export interface Reader {
  prisma: PrismaClient;
  db: PgStatements;
  /** A standby: it takes no writes (a read that would store something as it goes must not). */
  standby?: boolean;
}

/** Connections to the replica per API process: reads only, and fewer of them than the primary's pool. */
const REPLICA_POOL_SIZE = 10;

/** How long the replica may take to answer the lag check before it counts as down. */
const CHECK_WITHIN_MS = 1000;

/** Primary positions kept to match the replica's against: about one max lag's worth. */
const SAMPLES_KEPT = 64;

export interface ReplicaState {
  /** `up`: reads go to it; `lagging`: further behind than DATABASE_READ_MAX_LAG_MS; `down`: it did not answer, or is no replica. */
  state: 'up' | 'lagging' | 'down';
  /** How far behind the primary it was at the last check (up to one check's interval when it keeps up with a busy primary). */
  lagMs?: number;
  detail?: string;
}

/**
 * DATABASE_READ_URL: the API's reads that may be a moment old (lists, the latency
 * history, hosts, the portal's views) go to a streaming replica, so they cost the primary
 * nothing; the reads of one resource by id, every write and everything the worker does
 * stay on the primary.
 *
 * How far behind the replica is: every check (a quarter of the max lag, at most 250 ms)
 * notes the primary's WAL position and the time it was read, then asks the replica how
 * far it has replayed. `caughtUpTo` is the time of the newest noted position the replica
 * has reached: everything committed on the primary before then is on the replica.
 *
 * Read after write: a request that may have written (any method but GET, HEAD and
 * OPTIONS, with a key or a portal session) notes the time for its key before its answer
 * is sent (registerReadAfterWrite). A read of that key goes to the replica only once
 * `caughtUpTo` is past that time, else to the primary: a client listing what it just
 * created through this process sees it. Another API process does not know of the write;
 * there the list is at most the max lag old, and a read by id (on the primary) is always
 * current.
 *
 * A replica that lags past DATABASE_READ_MAX_LAG_MS, does not answer the check within a
 * second, or is not in recovery (a promoted one has left the primary's timeline) is
 * skipped until a check finds it well; a read the replica fails (not a refusal of the
 * request, AppError) is run on the primary at once and the replica skipped until the next
 * check. /health/ready says which (`replica`), without failing: the primary serves every
 * read meanwhile. On a replica the latency history computes its closed buckets without
 * storing them (LatencyRepository): a standby takes no writes.
 */
@Injectable()
export class ReadReplica implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(ReadReplica.name);
  private readonly primary: Reader;
  private readonly replica?: { reader: Reader; pool: pg.Pool };
  private readonly checkEveryMs: number;
  /** Primary WAL positions with the time each was read, oldest first. */
  private samples: { at: number; lsn: bigint }[] = [];
  private caughtUpTo = Number.NEGATIVE_INFINITY;
  private current: ReplicaState = { state: 'down', detail: 'not checked yet' };
  /** When each key last wrote through this process: its reads stay on the primary until the replica is past it. */
  private readonly wroteAt = new Map<string, number>();
  private timer?: NodeJS.Timeout;
  private checking?: Promise<void>;
  private stopped = false;

  constructor(
    prisma: PrismaService,
    db: ApiDatabase,
    @Inject(DATABASE_TARGET) target: DatabaseTarget,
    private readonly config: AppConfig,
    private readonly caught: CaughtErrors,
  ) {
    this.primary = { prisma, db };
    this.checkEveryMs = Math.min(250, Math.floor(config.databaseReadMaxLagMs / 4));
    if (!config.databaseReadUrl || config.role === 'worker') return;
    // As the primary's pool: behind a pooler (the primary's target is one) every statement is unnamed and each transaction sets the timeouts.
    const pool = openPool(
      config.databaseReadUrl,
      REPLICA_POOL_SIZE,
      (error) => caught.record('read_replica_idle_connection', error, 'dropped from the pool; the next read opens another'),
      target.pooled ? {} : timeoutSettings(config),
      answerWithinMs(config),
    );
    const prismaReads = new PrismaClient({ adapter: new PrismaPg(pool, target.pooled ? {} : { statementNameGenerator: statementNamer('prisma_read') }) });
    const dbReads = new PgStatements(pool, target.pooled ? null : 'read', {}, target.pooled ? timeoutSettings(config) : {});
    this.replica = { reader: { prisma: prismaReads, db: dbReads, standby: true }, pool };
  }

  /** Whether DATABASE_READ_URL is in use in this process. */
  get configured(): boolean {
    return this.replica !== undefined;
  }

  async onModuleInit(): Promise<void> {
    if (!this.replica) return;
    await this.check();
    if (this.current.state !== 'up') this.logger.warn(`read replica (DATABASE_READ_URL) not used at start: ${describe(this.current)}; reads go to the primary`);
    else this.logger.log('read replica (DATABASE_READ_URL) in use for lists and history');
    this.timer = setInterval(() => void this.check(), this.checkEveryMs).unref();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.checking;
    if (!this.replica) return;
    await this.replica.reader.prisma.$disconnect();
    await this.replica.pool.end();
  }

  /** The replica's state for /health/ready; undefined without DATABASE_READ_URL. */
  state(): ReplicaState | undefined {
    return this.replica ? { ...this.current } : undefined;
  }

  /** Notes that `apiKeyId` may just have written: its reads stay on the primary until the replica has it. */
  noteWrite(apiKeyId: string): void {
    if (this.replica) this.wroteAt.set(apiKeyId, Date.now());
  }

  /**
   * Runs `work`, a read of `apiKeyId`'s data that may be a moment old, on the replica
   * when it is up and has every write this process made for the key; else on the
   * primary. A read that fails on the replica runs again on the primary.
   */
  async read<T>(apiKeyId: string, work: (reader: Reader) => Promise<T>): Promise<T> {
    if (!this.replica || !this.servesKey(apiKeyId)) return work(this.primary);
    try {
      return await work(this.replica.reader);
    } catch (error) {
      // A refusal of the request itself would be the same on the primary: only the replica's own failures skip it.
      if (error instanceof AppError || error instanceof HttpException) throw error;
      this.skip(error);
      return work(this.primary);
    }
  }

  private servesKey(apiKeyId: string): boolean {
    if (this.current.state !== 'up') return false;
    const wrote = this.wroteAt.get(apiKeyId);
    return wrote === undefined || wrote <= this.caughtUpTo;
  }

  private skip(error: unknown): void {
    const detail = firstLine(error);
    this.caught.record('read_replica', error, 'read again on the primary; the replica skipped until its next check');
    this.current = { state: 'down', detail };
  }

  /** One check; a check still running when the next is due is not doubled. */
  private check(): Promise<void> {
    this.checking ??= this.checkOnce().finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async checkOnce(): Promise<void> {
    if (this.stopped || !this.replica) return;
    const at = Date.now();
    let primaryLsn: bigint;
    try {
      const [row] = await this.primary.db.query<{ lsn: string }>(Prisma.sql`SELECT pg_current_wal_lsn()::text AS lsn`);
      primaryLsn = lsnOf(row.lsn);
    } catch (error) {
      // The primary's own trouble is the database check's; reads stay where they are until a position is known again.
      if (!this.stopped) this.caught.record('read_replica_primary_position', error, 'checked again shortly');
      return;
    }
    this.samples.push({ at, lsn: primaryLsn });
    if (this.samples.length > SAMPLES_KEPT) this.samples.shift();
    const before = this.current.state;
    try {
      const [row] = await withinMs(
        this.replica.reader.db.query<{ lsn: string | null; recovering: boolean }>(
          Prisma.sql`SELECT pg_last_wal_replay_lsn()::text AS lsn, pg_is_in_recovery() AS recovering`,
        ),
        CHECK_WITHIN_MS,
      );
      if (!row.recovering || row.lsn === null) {
        this.current = { state: 'down', detail: 'not a streaming replica (pg_is_in_recovery() is false): skipped' };
      } else {
        const replayed = lsnOf(row.lsn);
        const reached = this.samples.filter((s) => s.lsn <= replayed);
        if (reached.length > 0) {
          this.caughtUpTo = Math.max(this.caughtUpTo, reached.at(-1)!.at);
          this.samples = this.samples.filter((s) => s.lsn > replayed);
        }
        const lagMs = Math.max(0, at - this.caughtUpTo);
        this.current =
          lagMs <= this.config.databaseReadMaxLagMs
            ? { state: 'up', lagMs }
            : { state: 'lagging', lagMs, detail: `more than DATABASE_READ_MAX_LAG_MS (${this.config.databaseReadMaxLagMs} ms) behind: skipped` };
      }
    } catch (error) {
      this.current = { state: 'down', detail: firstLine(error) };
    }
    for (const [key, wrote] of this.wroteAt) if (wrote <= this.caughtUpTo) this.wroteAt.delete(key);
    if (before !== this.current.state && !this.stopped) {
      if (this.current.state === 'up') this.logger.log(`read replica back in use (${this.current.lagMs} ms behind)`);
      else this.logger.warn(`read replica skipped: ${describe(this.current)}; reads go to the primary`);
    }
  }
}

/** A WAL position (`16/B374D848`) as a number. */
export function lsnOf(text: string): bigint {
  const [high, low] = text.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

function describe(s: ReplicaState): string {
  return `${s.state}${s.detail ? ` (${s.detail})` : ''}`;
}
