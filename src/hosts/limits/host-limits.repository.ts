import { Injectable } from '@nestjs/common';
import type { BreakerStateName } from '../../model/states.js';
import { AppConfig } from '../../config/app.config.js';
import { DispatchDatabase } from '../../database/dispatch-database.js';
import { breakerTransitions, type BreakerTransition } from '../../queue/operator-causes.sql.js';
import { operatorEventDefaults, type OperatorEventDefaults } from '../../queue/operator-event.sql.js';
import {
  deleteIdleKeyBreakers,
  insertGoneEndpoints,
  insertKeyBreakers,
  keyBreakers,
  lockBreakers,
  lockKeyBreakers,
  notableHosts,
  writeBreakers,
  writeKeyBreakers,
} from './host-limits.sql.js';
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

/** A key's own breaker at a host (host_key_breaker). */
export interface KeyBreakerRow extends BreakerState {
  host: string;
  apiKeyId: string;
}

/** The worker's per-host statements (host-limits.sql.ts), on the dispatch pool like the claim that reads them. */
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

  /** Every key breaker that is not clean (a handful). */
  findKeyBreakers(): Promise<KeyBreakerRow[]> {
    return this.db.query<KeyBreakerRow>(keyBreakers());
  }

  /**
   * Applies key breaker reports in one short transaction, as updateBreakers does for
   * hosts: inserts the rows of pairs with failures to count, locks every pair's row in
   * (host, key) order, lets `decide` compute each next state from the locked one (a
   * pair without a row is clean), writes them (deleting the clean ones). `pairs` with
   * failures (`failing`) get a row; those with only answers change rows that exist.
   */
  updateKeyBreakers(
    pairs: Array<{ host: string; apiKeyId: string; failing: boolean }>,
    decide: (host: string, apiKeyId: string, current: BreakerState) => BreakerState,
  ): Promise<KeyBreakerRow[]> {
    const sorted = [...pairs].sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : a.apiKeyId < b.apiKeyId ? -1 : a.apiKeyId > b.apiKeyId ? 1 : 0));
    return this.db.transaction(async (tx) => {
      const failing = sorted.filter((p) => p.failing);
      if (failing.length > 0) await tx.execute(insertKeyBreakers(failing));
      const rows = await tx.query<KeyBreakerRow>(lockKeyBreakers(sorted));
      const found = new Map(rows.map(({ host, apiKeyId, ...state }) => [`${host} ${apiKeyId}`, state]));
      const next = sorted.map(({ host, apiKeyId }) => {
        const current = found.get(`${host} ${apiKeyId}`) ?? CLEAN;
        return { host, apiKeyId, current, state: decide(host, apiKeyId, current) };
      });
      // a row whose next state is clean is deleted, even one just inserted
      const changed = next.filter((n) => found.has(`${n.host} ${n.apiKeyId}`) && (!sameBreaker(n.current, n.state) || sameBreaker(n.state, CLEAN)));
      if (changed.length > 0) await tx.execute(writeKeyBreakers(changed));
      return next.map(({ host, apiKeyId, state }) => ({ host, apiKeyId, ...state }));
    });
  }

  /** Deletes key breakers unused for `idleMs` whose pause is over; returns how many. */
  deleteIdleKeyBreakers(idleMs: number): Promise<number> {
    return this.db.execute(deleteIdleKeyBreakers(idleMs));
  }

  /** Records URLs that answered 410 Gone; the claim fails their callbacks from now on. */
  async insertGoneEndpoints(rows: Array<{ url: string; host: string; apiKeyId: string; statusCode: number }>): Promise<void> {
    if (rows.length > 0) await this.db.execute(insertGoneEndpoints(rows));
  }
}

const CLEAN: BreakerState = { state: 'closed', failures: 0, openedAt: null, openUntil: null };

const time = (d: Date | null) => d?.getTime() ?? null;
const sameBreaker = (a: BreakerState, b: BreakerState) =>
  a.state === b.state && a.failures === b.failures && time(a.openedAt) === time(b.openedAt) && time(a.openUntil) === time(b.openUntil);
