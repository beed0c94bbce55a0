import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { CaughtErrors } from '../../logging/caught-errors.js';
import { AppConfig } from '../../config/app.config.js';
import { NO_RESULTS, foldInto, isNoop, nextBreaker, type BreakerSettings, type BreakerState, type HostResults } from './breaker.policy.js';
import type { Outcome } from '../../model/states.js';
import { HostLimitsRepository } from './host-limits.repository.js';

/** How often a worker re-reads limit overrides and breaker states. */
const REFRESH_MS = 1000;
/** Breaker reports are sent at most this often (a failure is reported within it). */
const REPORT_MS = 10;

const CLEAN: BreakerState = { state: 'closed', failures: 0, openedAt: null, openUntil: null };

/**
 * The worker's side of per-host limits, which the claim enforces (sql/claim.sql.ts,
 * host-limits.sql.ts) against the shared `host` rows. This service
 *  - feeds the circuit breakers: each finished call is folded into its host's results
 *    and its key's at that host (breaker.policy.ts `failureScope`) and reported in
 *    batches, so N such failures in a row across all workers open the host, or that
 *    key's breaker at the host; reports that change nothing for a healthy host are
 *    skipped, so a steady stream of successes costs no statement;
 *  - records endpoints that answered 410 Gone;
 *  - caches per-host caps for the in-process queues (HostQueues), refreshed every second.
 */
@Injectable()
export class HostLimitsService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(HostLimitsService.name);
  private caps = new Map<string, number>();
  private breakers = new Map<string, BreakerState>();
  private results = new Map<string, HostResults>();
  /** Key breakers not clean, by `host key`, and the results not yet reported of each pair. */
  private keyBreakers = new Map<string, BreakerState>();
  private keyResults = new Map<string, { host: string; apiKeyId: string; results: HostResults }>();
  private gone: Array<{ url: string; host: string; apiKeyId: string; statusCode: number }> = [];
  /** Hosts whose breaker this worker's results open, until the report saying so has landed. */
  private readonly opening = new Set<string>();
  private refreshTimer?: NodeJS.Timeout;
  private reportTimer?: NodeJS.Timeout;
  private reporting?: Promise<void>;
  private stopped = false;
  private readonly breakerSettings: BreakerSettings;

  constructor(
    private readonly config: AppConfig,
    private readonly hosts: HostLimitsRepository,
    private readonly caught: CaughtErrors,
  ) {
    this.breakerSettings = { threshold: config.hostBreakerFailures, cooldownMs: config.hostBreakerCooldownMs };
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.role === 'api') return;
    await this.refresh();
    this.refreshTimer = setInterval(() => void this.refresh(), REFRESH_MS);
    this.refreshTimer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.refreshTimer);
    clearTimeout(this.reportTimer);
    this.reportTimer = undefined;
    await this.report();
    this.stopped = true;
  }

  /** The in-flight cap of a destination (its override, else HOST_MAX_IN_FLIGHT). */
  capFor(host: string): number {
    return this.caps.get(host) ?? this.config.hostMaxInFlight;
  }

  /**
   * Hosts not to claim for now: their breaker opens with results this worker has not
   * reported yet. A down host fails each call at once, so until the report lands
   * (10 ms, longer while the host row is locked), every write-back freed its slots for
   * another round of calls bound to fail.
   */
  openingHosts(): Iterable<string> {
    return this.opening;
  }

  /** A call finished: count it for its host's breaker and its key's at the host, note a 410. */
  record(row: { host: string; url: string; apiKeyId: string }, result: { outcome: Outcome; statusCode?: number }): void {
    const folded = foldInto('host', this.results.get(row.host) ?? NO_RESULTS, result.outcome);
    this.results.set(row.host, folded);
    if (folded.trailingFailures === 0)
      this.opening.delete(row.host); // it answered
    else if (!this.opening.has(row.host) && this.opens(row.host, folded)) this.opening.add(row.host);
    if (result.statusCode === 410) this.gone.push({ url: row.url, host: row.host, apiKeyId: row.apiKeyId, statusCode: 410 });
    const pair = `${row.host} ${row.apiKeyId}`;
    const keyFolded = foldInto('key', this.keyResults.get(pair)?.results ?? NO_RESULTS, result.outcome);
    const keyPending = !isNoop(this.keyBreakers.get(pair) ?? CLEAN, keyFolded);
    if (keyPending) this.keyResults.set(pair, { host: row.host, apiKeyId: row.apiKeyId, results: keyFolded });
    else this.keyResults.delete(pair);
    const pending = this.gone.length > 0 || !isNoop(this.breakers.get(row.host) ?? CLEAN, folded);
    if (!pending) this.results.delete(row.host);
    if (pending || keyPending) this.schedule(REPORT_MS);
  }

  private opens(host: string, results: HostResults): boolean {
    const known = this.breakers.get(host) ?? CLEAN;
    return known.state !== 'open' && nextBreaker(known, results, this.breakerSettings, new Date()).state === 'open';
  }

  /** Sends pending breaker results and gone endpoints; one report at a time, failures retried. */
  async report(): Promise<void> {
    this.reportTimer = undefined;
    while (this.reporting) await this.reporting;
    const results = this.results;
    const keyResults = this.keyResults;
    const gone = this.gone;
    if (results.size === 0 && keyResults.size === 0 && gone.length === 0) return;
    this.results = new Map();
    this.keyResults = new Map();
    this.gone = [];
    this.reporting = this.send(results, keyResults, gone);
    try {
      await this.reporting;
    } finally {
      this.reporting = undefined;
    }
  }

  private async send(results: Map<string, HostResults>, keyResults: typeof this.keyResults, gone: typeof this.gone): Promise<void> {
    try {
      await this.hosts.insertGoneEndpoints(gone);
      const now = new Date();
      if (results.size > 0) {
        const next = await this.hosts.updateBreakers([...results.keys()], (host, current) =>
          nextBreaker(current, results.get(host) ?? NO_RESULTS, this.breakerSettings, now),
        );
        for (const [host, state] of next) this.remember(host, state);
        // The host rows now say it (results gathered meanwhile wait for their own report).
        for (const host of results.keys()) if (!this.results.has(host)) this.opening.delete(host);
        results.clear();
      }
      if (keyResults.size > 0) {
        const pairs = [...keyResults.values()].map(({ host, apiKeyId, results: r }) => ({ host, apiKeyId, failing: r.trailingFailures > 0 }));
        const next = await this.hosts.updateKeyBreakers(pairs, (host, apiKeyId, current) =>
          nextBreaker(current, keyResults.get(`${host} ${apiKeyId}`)?.results ?? NO_RESULTS, this.breakerSettings, now),
        );
        for (const { host, apiKeyId, ...state } of next) this.rememberKey(`${host} ${apiKeyId}`, state);
      }
    } catch (error) {
      this.caught.count('host_limits_report');
      this.logger.warn(`could not record host breaker results, will retry: ${(error as Error).message}`);
      for (const [host, r] of results) if (!this.results.has(host)) this.results.set(host, r);
      for (const [pair, r] of keyResults) if (!this.keyResults.has(pair)) this.keyResults.set(pair, r);
      this.gone.push(...gone);
      this.schedule(500);
    }
  }

  private schedule(ms: number): void {
    if (this.reportTimer || this.stopped) return;
    this.reportTimer = setTimeout(() => void this.report(), ms);
    this.reportTimer.unref();
  }

  private remember(host: string, state: BreakerState): void {
    if (state.state === 'closed' && state.failures === 0) this.breakers.delete(host);
    else this.breakers.set(host, state);
  }

  private rememberKey(pair: string, state: BreakerState): void {
    if (state.state === 'closed' && state.failures === 0) this.keyBreakers.delete(pair);
    else this.keyBreakers.set(pair, state);
  }

  private async refresh(): Promise<void> {
    try {
      const keyRows = await this.hosts.findKeyBreakers();
      this.keyBreakers = new Map();
      for (const { host, apiKeyId, ...state } of keyRows) this.rememberKey(`${host} ${apiKeyId}`, state);
      const rows = await this.hosts.findNotableHosts();
      this.caps = new Map(rows.filter((r) => r.maxInFlight !== null).map((r) => [r.host, r.maxInFlight!]));
      this.breakers = new Map();
      for (const r of rows) {
        this.remember(r.host, { state: r.breakerState, failures: r.consecutiveFailures, openedAt: r.openedAt, openUntil: r.openUntil });
      }
    } catch (error) {
      this.caught.record('host_limits_refresh', error, 'keeping the last known limits and breakers until the next refresh');
    }
  }
}
