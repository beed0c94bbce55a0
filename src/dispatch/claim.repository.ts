import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app.config.js';
import { DispatchDatabase } from '../database/dispatch-database.js';
import type { PgStatements } from '../database/pg.statements.js';
import { MetricsService } from '../metrics/metrics.service.js';
import * as claims from './sql/claim.sql.js';
import { nextDueAt } from './sql/lease.sql.js';
import { nowSql } from './sql/time.sql.js';

/** A callback this worker holds a lease on, with everything needed to send it. */
export interface ClaimedCallback {
  id: string;
  batchId: string;
  apiKeyId: string;
  url: string;
  host: string;
  method: string;
  headers: Record<string, string>;
  body: string | null;
  timeoutMs: number;
  maxAttempts: number;
  retryDelaysMs: number[] | null;
  /** Attempts finished before this one; this attempt is number `attempts + 1`. */
  attempts: number;
  /** 0 high, 1 normal, 2 low: the waiting queue of its host sends higher ones first. */
  priority: number;
  /** Trace context of the API request that accepted it (only while tracing was on). */
  traceparent?: string | null;
  /** Its receiver, whose secrets sign it; null: signed with its key's secret for its destination. */
  receiverId: string | null;
  /**
   * It may go to the ranges ALLOW_PRIVATE_NETWORKS opens: its key is granted them and its
   * destination is not one a portal session chose (claim.sql.ts `moved`). Otherwise the
   * transport connects to public addresses only.
   */
  privateNetworks: boolean;
  /** An event's delivery: the event whose body it sends (stored there once; `body` is filled in from it). */
  bodyEventId?: string | null;
}

/** A row the claim statements answer: a leased callback, a gone one (id only), or an event's body (no id). */
type ClaimRow = Omit<ClaimedCallback, 'id'> & { id: string | null; gone: boolean };

export interface ClaimOptions {
  /**
   * Called with each statement's rows as soon as it returns, before the next runs,
   * so the first rows are sending while the claim looks past the front. Answering
   * false ends the claim there (the worker began to stop).
   */
  onClaimed?: (rows: ClaimedCallback[]) => Promise<boolean | void> | boolean | void;
  /** The time the claim runs at (tests); default the database's now(). */
  now?: Date;
  /** Also take free slots of hosts another worker claimed within HOST_AFFINITY_MS (ClaimArgs.takeKept). */
  takeKept?: boolean;
  /** Calls the worker can start at once (ClaimArgs.sendRoom); default: all it claims. */
  sendRoom?: number;
  /**
   * Called with the ids of due rows a statement met whose URL answered 410 Gone to
   * their key: left pending, not leased, for the caller to fail without a call
   * (CompleterService.failGone). Without it they stay pending for a later claim.
   */
  onGone?: (ids: string[]) => Promise<void> | void;
}

/**
 * The claim statements (sql/claim.sql.ts), each timed in the metrics, on a
 * connection of their own that carries their planner settings (CLAIM_PLANNER:
 * DispatchDatabase.runnerWith). One: a worker runs one claim at a time.
 */
@Injectable()
export class ClaimRepository {
  /** The claims' own runner (exposed for the tests that read the plans of the statements sent). */
  readonly claimDb: PgStatements;

  constructor(
    private readonly db: DispatchDatabase,
    private readonly config: AppConfig,
    private readonly metrics: MetricsService,
  ) {
    this.claimDb = db.runnerWith('claim', claims.CLAIM_PLANNER, 1);
  }

  /**
   * Takes up to `limit` due callbacks and leases them to `owner`, within each
   * destination's limits, which hold across all worker processes: the front (oldest
   * due rows), then past it, host by host, for what the front did not fill. A limit
   * of 0 runs the front only (the warm-up). Returns every row claimed.
   */
  async claimDue(owner: string, limit: number, leaseMarginMs: number, skipHosts: string[], options: ClaimOptions = {}): Promise<ClaimedCallback[]> {
    const args: claims.ClaimArgs = {
      owner,
      limit,
      leaseMarginMs,
      skipHosts,
      now: nowSql(options.now),
      defaultCap: this.config.hostMaxInFlight,
      cooldownMs: this.config.hostBreakerCooldownMs,
      affinityMs: this.config.hostAffinityMs,
      takeKept: options.takeKept ?? false,
      sendRoom: options.sendRoom ?? limit,
    };
    const front = await this.run(claims.claimFront(args), options);
    const goOn = front.length > 0 ? await options.onClaimed?.(front) : undefined;
    if (front.length >= limit || goOn === false) return front;
    const past = await this.run(claims.claimPastBlocked({ ...args, limit: limit - front.length, sendRoom: args.sendRoom - front.length }), options);
    if (past.length > 0) await options.onClaimed?.(past);
    return front.concat(past);
  }

  /**
   * The hosts, one entry per row, of due rows of `keys` with a priority above `below`
   * (a smaller number) bound for `hosts` (dueAhead): what should pass the claimed rows
   * of priority `below` or lower that this worker holds for those hosts.
   */
  async dueAhead(keys: string[], hosts: string[], below: number, now?: Date): Promise<Array<{ host: string; priority: number }>> {
    if (keys.length === 0 || hosts.length === 0 || below <= 0) return [];
    return this.claimDb.query<{ host: string; priority: number }>(claims.dueAhead(keys, hosts, below, nowSql(now)));
  }

  /** When the next pending callback falls due, to sleep exactly until then. */
  async nextDueAt(): Promise<Date | undefined> {
    const rows = await this.db.query<{ at: Date | null }>(nextDueAt());
    return rows[0]?.at ?? undefined;
  }

  /**
   * One claim statement: the rows it leased, each event's delivery given its event's
   * body (answered once per event, as a row with no id: one string shared by all its
   * deliveries), after handing those of gone URLs to `onGone`.
   */
  private async run(statement: ReturnType<typeof claims.claimFront>, options: ClaimOptions): Promise<ClaimedCallback[]> {
    const rows = await this.metrics.timeClaim(() => this.claimDb.query<ClaimRow>(statement));
    const claimed: ClaimedCallback[] = [];
    const gone: string[] = [];
    let bodies: Map<string, string | null> | undefined;
    for (const r of rows) {
      if (r.id === null) (bodies ??= new Map()).set(r.bodyEventId!, r.body);
      else if (r.gone) gone.push(r.id);
      else claimed.push(r as ClaimedCallback);
    }
    if (bodies) for (const r of claimed) if (r.bodyEventId) r.body = bodies.get(r.bodyEventId) ?? null;
    if (gone.length > 0) await options.onGone?.(gone);
    return claimed;
  }
}
