import { Injectable } from '@nestjs/common';
import type { BreakerStateName } from '../../common/states.js';
import { DispatchDatabase } from '../../database/dispatch-database.js';
import { insertGoneEndpoints, lockBreakers, notableHosts, writeBreakers } from '../sql/host-limits.sql.js';
import type { BreakerState } from './breaker.policy.js';

/** A host row as the worker's cache reads it. */
export interface NotableHostRow {
  host: string;
  maxInFlight: number | null;
  breakerState: BreakerStateName;
  consecutiveFailures: number;
  openedAt: Date | null;
  openUntil: Date | null;
}

/** The worker's per-host statements (sql/host-limits.sql.ts), on the dispatch pool like the claim that reads them. */
@Injectable()
export class HostLimitsRepository {
  constructor(private readonly db: DispatchDatabase) {}

  /** Hosts with a cap override or a breaker that is not clean (small: what a worker caches). */
  findNotableHosts(): Promise<NotableHostRow[]> {
    return this.db.query<NotableHostRow>(notableHosts());
  }

  /**
   * Applies breaker reports in one short transaction: locks the hosts' rows in name
   * order (so concurrent reporters and claims cannot deadlock), lets `decide` compute
   * each next state from the locked (latest) one, writes them with one statement. A
   * claim for these hosts waits the millisecond this takes.
   */
  updateBreakers(hosts: string[], decide: (host: string, current: BreakerState) => BreakerState): Promise<Map<string, BreakerState>> {
    return this.db.transaction(async (tx) => {
      const rows = await tx.query<BreakerState & { host: string }>(lockBreakers(hosts));
      const next = new Map<string, BreakerState>();
      for (const { host, ...current } of rows) next.set(host, decide(host, current));
      if (next.size > 0) await tx.execute(writeBreakers([...next.entries()]));
      return next;
    });
  }

  /** Records URLs that answered 410 Gone; the claim fails their callbacks from now on. */
  async insertGoneEndpoints(rows: Array<{ url: string; host: string; apiKeyId: string; statusCode: number }>): Promise<void> {
    if (rows.length > 0) await this.db.execute(insertGoneEndpoints(rows));
  }
}
