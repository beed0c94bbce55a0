import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { AppConfig } from '../config/app.config.js';
import { isDatabaseUnavailable } from '../database/database.errors.js';
import { NotifyListener } from '../database/notify.listener.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { SigningSecretService } from '../signing/signing-secret.service.js';
import { claimLimit } from './claim.policy.js';
import { ClaimRepository, type ClaimedCallback } from './claim.repository.js';
import { HostLimitsService } from './host-limits.service.js';
import { HostQueues } from './host.queues.js';
import { OutcomeRepository } from './outcome.repository.js';
import { OutcomeWriter } from './outcome.writer.js';
import { uuidv7 } from '../common/uuid.js';
import { buildRequest, toRecordedOutcome } from './request.builder.js';
import { HttpTransport } from './transport/http.transport.js';

type State = 'stopped' | 'running' | 'draining';
const HEARTBEAT = 'dispatch-heartbeat';
/** Calls started per turn of the event loop (see startCalls). */
const START_SLICE = 32;

/**
 * The worker loop: wake (NOTIFY, heartbeat or the next due time) → claim due rows
 * in one statement → keep at most DISPATCH_CONCURRENCY calls in flight, each
 * completion replaced at once by the next waiting callback (a rolling window, with
 * per-host caps) → buffer outcomes → write back in batches.
 *
 * Invariants: a row is in `queues` or in flight only while this worker holds its
 * lease; each claimed row leaves exactly once, through `finish` (an outcome to
 * write back) or `release` (handed back untouched).
 */
@Injectable()
export class DispatcherService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(DispatcherService.name);
  readonly owner = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  private state: State = 'stopped';
  private readonly queues: HostQueues<ClaimedCallback>;
  private readonly writer: OutcomeWriter;
  private readonly sending = new Set<ClaimedCallback>();
  private claiming = false;
  /** The claim loop under way, if any: shutdown waits for it before handing rows back. */
  private claimRun?: Promise<void>;
  private claimAgain = false;
  /** The last claim stopped for lack of room in the window: a finished call should claim again. */
  private claimWhenRoom = false;
  private continueStarting?: NodeJS.Immediate;
  private dueTimer?: NodeJS.Timeout;
  private dueAt = 0;
  private idle?: () => void;
  private lastClaimError = 0;
  /** Last time the loop completed a claim without error (for readiness). */
  lastHealthyAt = 0;

  constructor(
    private readonly config: AppConfig,
    private readonly claims: ClaimRepository,
    private readonly outcomes: OutcomeRepository,
    private readonly transport: HttpTransport,
    private readonly signing: SigningSecretService,
    private readonly notify: NotifyListener,
    private readonly scheduler: SchedulerRegistry,
    private readonly hostLimits: HostLimitsService,
    private readonly metrics: MetricsService,
  ) {
    this.queues = new HostQueues((host) => hostLimits.capFor(host));
    this.writer = new OutcomeWriter(
      metrics.timedWriteBack(outcomes), this.owner, config.writebackIntervalMs, config.writebackMaxRows,
      (done) => done.forEach((b) => this.logBatchCompleted(b)),
      (at) => this.wakeAt(at),
      // A write-back lowers hosts' in-flight counts: their freed slots can be claimed.
      () => this.wake(),
    );
  }

  private logBatchCompleted(batch: { id: string; completedAt: Date }): void {
    this.logger.log({ msg: `batch ${batch.id} completed`, event: 'batch_completed', batchId: batch.id, completedAt: batch.completedAt.toISOString() });
  }

  get stats() {
    return { state: this.state, inFlight: this.sending.size, queued: this.queues.queued, unwritten: this.writer.pending };
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.role === 'api') return;
    await this.warmUp();
    this.state = 'running';
    this.scheduler.addInterval(HEARTBEAT, setInterval(() => void this.tick(), this.config.dispatchPollMs));
    await this.notify.listen(() => this.wake());
    void this.tick();
    this.logger.log(`worker ${this.owner} started: window ${this.config.dispatchConcurrency}, per host ${this.config.hostMaxInFlight}`);
  }

  /**
   * Runs every hot-path statement once on no rows before the first real claim.
   * A cold first run (query compilation, JIT) blocks the event loop for tens of
   * milliseconds, which would land in the recorded durations of the first batch.
   */
  private async warmUp(): Promise<void> {
    const nobody = uuidv7();
    try {
      await this.claims.claimFront(this.owner, 0, this.config.dispatchLeaseMarginMs, []);
      await this.claims.claimPastBlocked(this.owner, 0, this.config.dispatchLeaseMarginMs, []);
      await this.claims.nextDueAt();
      await this.signing.secretsFor([nobody]);
      const probe = { id: nobody, batchId: nobody, apiKeyId: nobody, url: 'http://0.0.0.0/', host: 'http://0.0.0.0:80', method: 'POST', headers: {}, body: null, timeoutMs: 1, maxAttempts: 1, retryDelaysMs: null, attempts: 0 };
      const result = { outcome: 'network_error' as const, trace: { startedAt: new Date(), durationMs: 0 } };
      await this.outcomes.recordOutcomes(this.owner, [toRecordedOutcome(probe, result, this.config)]);
      await this.outcomes.completeBatches([nobody]);
    } catch (error) {
      this.reportClaimError(error);
    }
    await this.transport.warmUp();
  }

  /** Something may be due: claim now, or right after the claim under way. */
  wake(): void {
    if (this.state !== 'running') return;
    if (this.claiming) this.claimAgain = true;
    else this.claimRun = this.claimLoop();
  }

  /** Heartbeat: recover expired leases, stamp finished batches, hand back stale waits, look for work. */
  private async tick(): Promise<void> {
    if (this.state !== 'running') return;
    try {
      await this.claims.reapExpiredLeases();
      this.lastHealthyAt = Date.now();
      const stale = this.queues.removeWaiting(Date.now() - this.config.dispatchLeaseMarginMs / 2);
      if (stale.length > 0) await this.release(stale);
      const open = await this.outcomes.openBatchesWithNothingLeft(100);
      for (const b of await this.outcomes.completeBatches(open)) this.logBatchCompleted(b);
    } catch (error) {
      this.reportClaimError(error);
    }
    this.wake();
  }

  private async claimLoop(): Promise<void> {
    this.claiming = true;
    try {
      do {
        this.claimAgain = false;
        const { limit, waitForRoom } = claimLimit({
          concurrency: this.config.dispatchConcurrency,
          claimBatch: this.config.dispatchClaimBatch,
          held: this.sending.size + this.queues.queued,
          sending: this.sending.size,
        });
        this.claimWhenRoom = waitForRoom;
        if (limit === 0) break;
        const margin = this.config.dispatchLeaseMarginMs;
        const front = await this.metrics.timeClaim(() => this.claims.claimFront(this.owner, limit, margin, this.skipHosts()));
        this.lastHealthyAt = Date.now();
        if (front.length > 0) await this.enqueue(front);
        let claimed = front.length;
        // Short: due rows past the front may belong to hosts with room. Look past it,
        // host by host, while the rows just claimed are already sending.
        if (claimed < limit && this.state === 'running') {
          const past = await this.metrics.timeClaim(() => this.claims.claimPastBlocked(this.owner, limit - claimed, margin, this.skipHosts()));
          if (past.length > 0) await this.enqueue(past);
          claimed += past.length;
        }
        if (claimed === limit) this.claimAgain = true;
        else await this.armDueTimer();
      } while (this.claimAgain && this.state === 'running');
    } catch (error) {
      this.reportClaimError(error);
    } finally {
      this.claiming = false;
    }
  }

  /** Hosts a claim passes over: those whose slots this worker fills, and those whose breaker it is about to open. */
  private skipHosts(): string[] {
    return [...this.queues.fullHosts(), ...this.hostLimits.openingHosts()];
  }

  private async enqueue(rows: ClaimedCallback[]): Promise<void> {
    // Secrets are looked up before anything starts so each send stays synchronous to build.
    const secrets = await this.signing.secretsFor(rows.map((r) => r.apiKeyId));
    const now = Date.now();
    for (const row of rows) {
      (row as ClaimedCallback & { secrets?: string[] }).secrets = secrets.get(row.apiKeyId) ?? [];
      this.queues.push(row, now);
    }
    // Claimed while shutdown began: they wait, and shutdown hands them back.
    if (this.state === 'running') this.startCalls();
  }

  /**
   * Fills the window from the waiting queues, at most START_SLICE calls per turn of
   * the event loop. Starting a whole claim (hundreds of calls) in one synchronous
   * run keeps the responses already on the wire waiting unread, and that wait would
   * land in their recorded durations; between slices they are read.
   */
  private startCalls(): void {
    for (let started = 0; this.sending.size < this.config.dispatchConcurrency; started++) {
      if (started === START_SLICE) {
        this.continueStarting ??= setImmediate(() => {
          this.continueStarting = undefined;
          if (this.state === 'running') this.startCalls();
        });
        return;
      }
      const row = this.queues.take();
      if (!row) return;
      this.sending.add(row);
      void this.send(row);
    }
  }

  private async send(row: ClaimedCallback & { secrets?: string[] }): Promise<void> {
    const result = await this.transport.send(buildRequest(row, row.secrets ?? [], this.config.httpTimeoutMs));
    // Past the shutdown deadline the row was handed back (and the call cut off): not ours to record.
    if (this.state === 'stopped') return;
    this.sending.delete(row);
    this.queues.done(row.host);
    this.hostLimits.record(row, result);
    this.metrics.attemptFinished(result);
    this.writer.add(toRecordedOutcome(row, result, this.config));
    // This worker holds every slot of the host (calls, waiting rows, outcomes not yet
    // written): slots come free only when written back (which wakes the claim). Write
    // as soon as the host's last call is done, so one write-back and one claim move a
    // whole cap's worth; until then the write-back interval applies, as for any host.
    // Writing at the first finished call split each cycle into pieces of ~10 rows at
    // cap 20 (two statements each), and a split cycle stayed split.
    const sendingToHost = this.queues.inFlight(row.host);
    if (sendingToHost === 0 && this.queues.queuedFor(row.host) + this.writer.pendingFor(row.host) >= this.hostLimits.capFor(row.host)) {
      this.writer.flushSoon();
    }
    if (this.state === 'draining') {
      if (this.sending.size === 0) this.idle?.();
      return;
    }
    this.startCalls();
    // Otherwise a finished call frees nothing a claim could use: host slots come
    // free with the write-back, which wakes the claim itself.
    if (this.claimWhenRoom) this.wake();
  }

  private async armDueTimer(): Promise<void> {
    const next = await this.claims.nextDueAt();
    // Overdue rows the claim left behind wait for busy, paused or rate-limited hosts.
    if (next) this.wakeAt(next.getTime() > Date.now() ? next : new Date(Date.now() + this.config.hostRecheckMs));
  }

  /** Wakes at `at` if that is sooner than the heartbeat and than a wake already set. */
  private wakeAt(at: Date): void {
    if (this.state !== 'running') return; // a claim that ends after shutdown began arms nothing
    const wait = Math.max(at.getTime() - Date.now(), 1);
    if (wait >= this.config.dispatchPollMs || (this.dueTimer && this.dueAt <= at.getTime())) return;
    clearTimeout(this.dueTimer);
    this.dueAt = at.getTime();
    this.dueTimer = setTimeout(() => {
      this.dueTimer = undefined;
      this.wake();
    }, wait);
  }

  private async release(rows: ClaimedCallback[]): Promise<void> {
    if (rows.length === 0) return;
    try {
      await this.claims.releaseClaims(this.owner, rows.map((r) => r.id));
    } catch (error) {
      this.logger.warn(`could not hand back ${rows.length} claimed callbacks (their leases will expire): ${(error as Error).message}`);
    }
  }

  /** Logged at most every 5 s: an outage must not flood the log. */
  private reportClaimError(error: unknown): void {
    if (Date.now() - this.lastClaimError < 5000) return;
    this.lastClaimError = Date.now();
    const message = (error as Error)?.message ?? String(error);
    if (isDatabaseUnavailable(error)) this.logger.warn(`database unavailable, dispatcher retrying: ${message}`);
    else this.logger.error(`dispatcher loop failed, retrying: ${message}`);
  }

  /**
   * Graceful stop (SIGTERM): claim nothing more, hand back what waits in memory,
   * let in-flight calls finish until SHUTDOWN_GRACE_MS, write every outcome back.
   * Calls still running at the deadline are handed back too (they may be sent
   * again later, with the same webhook-id), and the transport then cuts them off.
   */
  async onModuleDestroy(): Promise<void> {
    if (this.state !== 'running') return;
    this.state = 'draining';
    if (this.scheduler.doesExist('interval', HEARTBEAT)) this.scheduler.deleteInterval(HEARTBEAT);
    clearTimeout(this.dueTimer);
    const deadline = Date.now() + this.config.shutdownGraceMs;
    const untilDeadline = () => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, deadline - Date.now())).unref());
    // A claim under way puts its rows in the waiting queues (not sending them), to
    // be handed back with the rest; one stuck on the database is not waited for.
    await Promise.race([this.claimRun, untilDeadline()]);
    await this.release(this.queues.removeWaiting());
    if (this.sending.size > 0) {
      await new Promise<void>((resolve) => {
        this.idle = resolve;
        void untilDeadline().then(resolve);
      });
    }
    await this.writer.drain(deadline + 5000);
    this.state = 'stopped';
    if (this.sending.size > 0) {
      this.logger.warn(`${this.sending.size} calls still in flight at the shutdown deadline; handing them back to be sent again`);
    }
    // Calls cut off at the deadline, and rows a late claim brought in.
    await this.release([...this.sending, ...this.queues.removeWaiting()]);
  }
}
