import { Injectable, Logger } from '@nestjs/common';
import { Counter } from 'prom-client';
import { CaughtErrors } from '../logging/caught-errors.js';
import { BREAKER_STATES } from '../model/states.js';
import { HealthService } from '../health/health.service.js';
import { WorkerStatus } from '../worker-status/worker-status.service.js';
import { MetricsRepository } from './metrics.repository.js';
import { MetricsService } from './metrics.service.js';

/**
 * Gauges read at scrape time: the due backlog and per-host limiter state from the
 * database (shared by all workers), the window of this process's worker (WorkerStatus). A
 * failing query leaves its gauges at their last value and is logged; the scrape
 * still answers.
 */
@Injectable()
export class MetricsCollector {
  private readonly logger = new Logger(MetricsCollector.name);
  private readonly backlog;
  private readonly window;
  private readonly hostInFlight;
  private readonly keyDue;
  private readonly keyInFlight;
  private readonly hostBreaker;
  private readonly oldestDue;
  private readonly failingCount;
  private readonly failingReceiver;
  private readonly leader;
  private readonly ready;
  /** Only with DATABASE_READ_URL. */
  private readonly replica?: { state: ReturnType<MetricsService['gauge']>; lag: ReturnType<MetricsService['gauge']> };

  constructor(
    private readonly metrics: MetricsService,
    private readonly repo: MetricsRepository,
    private readonly worker: WorkerStatus,
    private readonly caught: CaughtErrors,
    private readonly health: HealthService,
  ) {
    const counted = new Map<string, number>();
    new Counter({
      name: 'errors_total',
      help: 'Errors the service caught and carried on from, by where (each also logged; CaughtErrors)',
      labelNames: ['where'],
      registers: [metrics.registry],
      collect() {
        for (const [where, n] of caught.byPlace) {
          this.inc({ where }, n - (counted.get(where) ?? 0));
          counted.set(where, n);
        }
      },
    });
    this.backlog = metrics.gauge('callback_due_backlog', 'Callbacks due now and not claimed yet (counted up to 100000)');
    this.window = metrics.gauge('dispatcher_window', "This worker's callbacks by place: in_flight, queued (claimed, waiting), unwritten (outcome buffered)", [
      'state',
    ]);
    this.keyDue = metrics.gauge('callback_key_due_backlog', 'Due callbacks not claimed yet, of the busiest keys (at most 10)', ['key_id', 'key_name']);
    this.keyInFlight = metrics.gauge('callback_key_in_flight', 'Callbacks in flight across all workers, of the busiest keys (at most 10)', [
      'key_id',
      'key_name',
    ]);
    this.hostInFlight = metrics.gauge('host_in_flight', 'Calls in flight per destination, across all workers', ['host']);
    this.hostBreaker = metrics.gauge('host_breaker_state', 'Circuit breaker per destination: 1 for its current state', ['host', 'state']);
    this.oldestDue = metrics.gauge('callback_due_oldest_age_seconds', 'Seconds since the oldest callback due and not claimed came due (0: none due)');
    this.failingCount = metrics.gauge(
      'receivers_failing',
      'Receivers whose every attempt failed since their last success, the last within 15 min (up to 10000)',
    );
    this.failingReceiver = metrics.gauge('receiver_failing_seconds', 'How long every attempt has failed, of the 10 receivers failing longest', [
      'key_name',
      'receiver',
    ]);
    this.leader = metrics.gauge('maintenance_leader', "1 while this process's worker leads maintenance (reaper, sweeps, retention), else 0");
    this.ready = metrics.gauge('service_ready', 'Readiness checks of this process, as /health/ready: 1 ok, 0 failing', ['check']);
    if (health.replica())
      this.replica = {
        state: metrics.gauge(
          'read_replica_state',
          'The read replica (DATABASE_READ_URL): 1 for its state, up (reads go there), lagging or down (they go to the primary)',
          ['state'],
        ),
        lag: metrics.gauge('read_replica_lag_seconds', 'How far the read replica was behind the primary at its last check'),
      };
  }

  async collect(): Promise<void> {
    const stats = this.worker.window;
    this.window.set({ state: 'in_flight' }, stats.inFlight);
    this.window.set({ state: 'queued' }, stats.queued);
    this.window.set({ state: 'unwritten' }, stats.unwritten);
    this.leader.set(this.worker.leader ? 1 : 0);
    await Promise.all([this.collectBacklog(), this.collectHosts(), this.collectKeys(), this.collectReceivers(), this.collectReadiness()]);
  }

  private async collectBacklog(): Promise<void> {
    try {
      const [due, oldest] = await Promise.all([this.repo.dueBacklog(), this.repo.oldestDueAgeSeconds()]);
      this.backlog.set(due);
      this.oldestDue.set(oldest);
    } catch (error) {
      this.caught.count('metrics_collect');
      this.logger.warn(`metrics: due backlog not read: ${(error as Error).message}`);
    }
  }

  private async collectReceivers(): Promise<void> {
    let failing;
    try {
      failing = await this.repo.failingReceivers();
    } catch (error) {
      this.caught.count('metrics_collect');
      this.logger.warn(`metrics: failing receivers not read: ${(error as Error).message}`);
      return;
    }
    this.failingCount.set(failing.count);
    this.failingReceiver.reset();
    for (const r of failing.longest) this.failingReceiver.set({ key_name: r.keyName, receiver: r.receiver }, r.seconds);
  }

  /** The checks of /health/ready (they bound their own time), so an alert needs no probe of its own. */
  private async collectReadiness(): Promise<void> {
    const checks = await this.health.checks();
    this.ready.reset();
    for (const [check, { ok }] of Object.entries(checks)) this.ready.set({ check }, ok ? 1 : 0);
    const replica = this.health.replica();
    if (!this.replica || !replica) return;
    this.replica.state.reset();
    this.replica.state.set({ state: replica.state }, 1);
    if (replica.lagMs !== undefined) this.replica.lag.set(replica.lagMs / 1000);
  }

  private async collectKeys(): Promise<void> {
    let keys;
    try {
      keys = await this.repo.busiestKeys();
    } catch (error) {
      this.caught.count('metrics_collect');
      this.logger.warn(`metrics: per-key backlog not read: ${(error as Error).message}`);
      return;
    }
    this.keyDue.reset();
    this.keyInFlight.reset();
    for (const k of keys) {
      this.keyDue.set({ key_id: k.id, key_name: k.name }, k.due);
      this.keyInFlight.set({ key_id: k.id, key_name: k.name }, k.inFlight);
    }
  }

  private async collectHosts(): Promise<void> {
    let hosts;
    try {
      hosts = await this.repo.hostStates();
    } catch (error) {
      this.caught.count('metrics_collect');
      this.logger.warn(`metrics: host states not read: ${(error as Error).message}`);
      return;
    }
    this.hostInFlight.reset();
    this.hostBreaker.reset();
    for (const h of hosts) {
      this.hostInFlight.set({ host: h.host }, h.inFlight);
      for (const state of BREAKER_STATES) this.hostBreaker.set({ host: h.host, state }, state === h.breakerState ? 1 : 0);
    }
  }
}
