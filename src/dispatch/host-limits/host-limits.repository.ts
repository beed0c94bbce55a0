import { Injectable } from '@nestjs/common';
import type { BreakerStateName } from '../../common/states.js';
import { AppConfig } from '../../config/app.config.js';
import { DispatchDatabase } from '../../database/dispatch-database.js';
import { breakerTransitions, type BreakerTransition } from '../../operator-events/operator-causes.sql.js';
import { operatorEventDefaults, type OperatorEventDefaults } from '../../operator-events/operator-event.sql.js';
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
  private readonly defaults: OperatorEventDefaults;

  constructor(
    private readonly db: DispatchDatabase,
    config: AppConfig,
  ) {
    this.defaults = operatorEventDefaults(config);
  }

  /** Hosts with a cap override or a breaker that is not clean (small: what a worker caches). */
  findNotableHosts(): Promise<NotableHostRow[]> {
    return this.db.query<NotableHostRow>(notableHosts());
  }

  /**
   * Applies breaker reports in one short transaction: locks the hosts' rows in name
   * order (so concurrent reporters and claims cannot deadlock), lets `decide` compute
   * each next state from the locked (latest) one, writes them with one statement. A
   * claim for these hosts waits the millisecond this takes. A breaker that opens
   * (from closed: its re-openings after a failed probe are the same outage) or
   * closes here gets its host.circuit_opened / _closed operator event in this
   * transaction: decided under the row lock, so once.
   */
  updateBreakers(hosts: string[], decide: (host: string, current: BreakerState) => BreakerState): Promise<Map<string, BreakerState>> {
    return this.db.transaction(async (tx) => {
      const rows = await tx.query<BreakerState & { host: string }>(lockBreakers(hosts));
      const next = new Map<string, BreakerState>();
      for (const { host, ...current } of rows) next.set(host, decide(host, current));
      if (next.size > 0) await tx.execute(writeBreakers([...next.entries()]));
      const transitions = rows.flatMap((r): BreakerTransition[] => {
        const n = next.get(r.host)!;
        if (r.state === 'closed' && n.state === 'open')
          return [{ host: r.host, opened: true, openedAt: n.openedAt, openUntil: n.openUntil, failures: n.failures }];
        if (r.state !== 'closed' && n.state === 'closed') return [{ host: r.host, opened: false, openedAt: null, openUntil: null, failures: n.failures }];
        return [];
      });
      if (transitions.length > 0) await tx.query(breakerTransitions(transitions, this.defaults));
      return next;
    });
  }

  /** Records URLs that answered 410 Gone; the claim fails their callbacks from now on. */
  async insertGoneEndpoints(rows: Array<{ url: string; host: string; apiKeyId: string; statusCode: number }>): Promise<void> {
    if (rows.length > 0) await this.db.execute(insertGoneEndpoints(rows));
  }
}
