import { Injectable, Logger } from '@nestjs/common';
import { CaughtErrors } from '../logging/caught-errors.js';
import { AppConfig } from '../config/app.config.js';
import { isDatabaseUnavailable, transientConflictOf } from '../database/database.errors.js';
import { WorkerStatus } from '../worker-status/worker-status.service.js';
import { claimLimit, nextRecheckMs } from './claim.policy.js';
import { CallPreparation, type QueuedCallback } from './call.preparation.js';
import { ClaimRepository, type ClaimedCallback } from './claim.repository.js';
import { CompleterService } from './completer.service.js';
import { HostLimitsService } from '../hosts/limits/host-limits.service.js';
import { HostQueues } from './host.queues.js';

/**
 * Step 1 of a callback's way through the worker: the producer claims due rows and keeps
 * them in per-host waiting queues until the sender takes them. One claim runs at a time
 * (a wake during it claims again at its end), woken by a NOTIFY after an ingest, the
 * heartbeat (DISPATCH_POLL_MS), the due timer (a row falling due, or a backing-off
 * recheck of overdue rows: nextRecheckMs), the completer after a write-back freed host
 * slots, or a finished call when the last claim lacked room in the window. Rows wait
 * here at most half a lease margin (the heartbeat hands older ones back), holding their
 * hosts' slots: when rows of a higher priority come due for those hosts, the claim first
 * hands back as many of each host's lowest waiting rows and takes the higher ones in
 * their places, whatever room its window has (yieldToHigher).
 */
@Injectable()
export class ProducerService {
  private readonly logger = new Logger(ProducerService.name);
  private readonly queues: HostQueues<QueuedCallback>;
  private readonly queuedListeners: Array<() => void> = [];
  private claiming = false;
  /** The claim loop under way, if any: shutdown waits for it before handing rows back. */
  private claimRun?: Promise<void>;
  private claimAgain = false;
  /** The last claim stopped for lack of room in the window: a finished call should claim again. */
  private claimWhenRoom = false;
  private heartbeat?: NodeJS.Timeout;
  private dueTimer?: NodeJS.Timeout;
  private dueAt = 0;
  /** The due timer armed is a look again at overdue rows (not a row falling due), and the delay of such looks now (nextRecheckMs). */
  private dueIsRecheck = false;
  private recheckMs: number;
  /** The claim about to run was woken by a recheck. */
  private wokenByRecheck = false;
  /** Rows of this priority or higher (a smaller number) may have come due: the next claim looks (yieldToHigher). */
  private lookAbove?: number;
  private lastError = 0;

  constructor(
    private readonly config: AppConfig,
    private readonly claims: ClaimRepository,
    private readonly preparation: CallPreparation,
    private readonly hostLimits: HostLimitsService,
    private readonly completer: CompleterService,
    private readonly status: WorkerStatus,
    private readonly caught: CaughtErrors,
  ) {
    this.recheckMs = this.config.hostRecheckMs;
    this.queues = new HostQueues((host) => hostLimits.capFor(host));
    // A write-back lowers hosts' in-flight counts: their freed slots can be claimed.
    completer.onWritten(() => this.wake());
    completer.onRetryScheduled((at) => this.wakeAt(at));
  }

  /** Calls in flight (taken and not yet done) plus rows waiting. */
  get held(): number {
    return this.queues.inFlightTotal + this.queues.queued;
  }

  get queued(): number {
    return this.queues.queued;
  }

  /** `listener` runs when claimed rows were queued (the sender fills its window then). */
  onQueued(listener: () => void): void {
    this.queuedListeners.push(listener);
  }

  /** Runs the claim statements once on no rows, so their first real run is not a cold one (see WorkerService.warmUp); nothing is claimed. */
  async warmUp(): Promise<void> {
    await this.claims.claimDue(this.status.owner, 0, this.config.dispatchLeaseMarginMs, []);
    await this.claims.nextDueAt();
    await this.preparation.warmUp();
  }

  /** Starts the heartbeat and claims once; NOTIFYs of new rows come through wakeFor (WorkerService listens). */
  start(): void {
    this.heartbeat = setInterval(() => this.beat(), this.config.dispatchPollMs);
    this.wake();
  }

  /** Rows of `priority` were stored: claim, looking above the rows waiting (yieldToHigher). */
  wakeFor(priority: number): void {
    this.lookAbove = Math.min(this.lookAbove ?? priority, priority);
    this.wake();
  }

  /** Something may be due: claim now, or right after the claim under way. */
  wake(): void {
    if (this.status.state !== 'running') return;
    if (this.claiming) this.claimAgain = true;
    else this.claimRun = this.claimLoop();
  }

  /** A call finished: the sender tells, so a claim that waited for room in the window can run. */
  callFinished(): void {
    if (this.claimWhenRoom) this.wake();
  }

  /** The next waiting row whose host has a free slot (counted in flight from now on), or undefined. */
  take(): QueuedCallback | undefined {
    return this.queues.take();
  }

  /** A call to `host` ended. */
  done(host: string): void {
    this.queues.done(host);
  }

  /** Calls of `host` in flight, and its rows waiting here. */
  hostLoad(host: string): { inFlight: number; queued: number } {
    return { inFlight: this.queues.inFlight(host), queued: this.queues.queuedFor(host) };
  }

  /** Removes and returns every waiting row (to hand back at shutdown). */
  removeWaiting(): QueuedCallback[] {
    return this.queues.removeWaiting();
  }

  /**
   * Stops claiming: no heartbeat, no due timer. Waits for a claim under way until
   * `deadline` (its rows then wait in the queues, to be handed back with the rest);
   * one stuck on the database is not waited for.
   */
  async stop(deadline: number): Promise<void> {
    clearInterval(this.heartbeat);
    clearTimeout(this.dueTimer);
    const untilDeadline = new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, deadline - Date.now())).unref());
    await Promise.race([this.claimRun, untilDeadline]);
  }

  /** Heartbeat: hand back rows that waited too long in memory, and look for work. */
  private beat(): void {
    if (this.status.state !== 'running') return;
    const stale = this.queues.removeWaiting(Date.now() - this.config.dispatchLeaseMarginMs / 2);
    if (stale.length > 0) void this.completer.release(stale);
    this.lookAbove = 0; // rows of any priority may have come due by time (runAt, retries)
    this.wake();
  }

  private async claimLoop(): Promise<void> {
    this.claiming = true;
    try {
      do {
        this.claimAgain = false;
        const yielded = this.lookAbove === undefined ? 0 : await this.yieldToHigher(this.lookAbove);
        const room = claimLimit({
          concurrency: this.config.dispatchConcurrency,
          claimBatch: this.config.dispatchClaimBatch,
          held: this.held,
          sending: this.queues.inFlightTotal,
        });
        this.claimWhenRoom = room.waitForRoom;
        const limit = Math.max(room.limit, yielded);
        if (limit === 0) break;
        const byRecheck = this.wokenByRecheck;
        this.wokenByRecheck = false;
        // Rows of the front start sending while the claim looks past it.
        const claimed = await this.claims.claimDue(this.status.owner, limit, this.config.dispatchLeaseMarginMs, this.skipHosts(), {
          onClaimed: (rows) => this.enqueue(rows),
          onGone: (ids) => this.completer.failGone(ids),
          // The slots just handed back, of hosts another worker may have claimed last.
          takeKept: yielded > 0,
          sendRoom: Math.max(0, this.config.dispatchConcurrency - this.held),
        });
        this.status.markHealthy();
        if (byRecheck) this.recheckMs = nextRecheckMs(this.recheckMs, claimed.length > 0, this.config.hostRecheckMs);
        if (claimed.length === limit) this.claimAgain = true;
        else await this.armDueTimer();
      } while (this.claimAgain && this.status.state === 'running');
    } catch (error) {
      this.reportError(error);
    } finally {
      this.claiming = false;
    }
  }

  /**
   * Hands back waiting rows of a lower priority than `priority` whose hosts have due
   * rows of a higher priority than theirs (ClaimRepository.dueAhead): per host, one
   * waiting row, the lowest first, for each such due row. Returns how many it handed
   * back, once they are pending again (their slots free for the claim that follows).
   */
  private async yieldToHigher(priority: number): Promise<number> {
    this.lookAbove = undefined;
    const { keys, hosts, lowest } = this.queues.waitingBelow(priority);
    if (hosts.length === 0) return 0;
    const ahead = await this.claims.dueAhead(keys, hosts, lowest);
    const yielded: QueuedCallback[] = [];
    for (const row of ahead) yielded.push(...this.queues.yieldTo(row.host, row.priority, 1));
    await this.completer.release(yielded);
    return yielded.length;
  }

  /** Hosts a claim passes over: those whose slots this worker fills, and those whose breaker it is about to open. */
  private skipHosts(): string[] {
    return [...this.queues.fullHosts(), ...this.hostLimits.openingHosts()];
  }

  /** Queues claimed rows; false once shutdown began (the claim then stops). */
  private async enqueue(rows: ClaimedCallback[]): Promise<boolean> {
    const prepared = await this.preparation.prepare(rows);
    const now = Date.now();
    for (const row of prepared) this.queues.push(row, now);
    // Claimed while shutdown began: they wait, and shutdown hands them back.
    if (this.status.state !== 'running') return false;
    this.queuedListeners.forEach((l) => l());
    return true;
  }

  private async armDueTimer(): Promise<void> {
    const next = await this.claims.nextDueAt();
    if (!next) return;
    if (next.getTime() > Date.now()) this.wakeAt(next);
    // Overdue rows the claim left behind wait for busy, paused or rate-limited hosts: look again (nextRecheckMs).
    else this.wakeAt(new Date(Date.now() + this.recheckMs), true);
  }

  /** Wakes at `at` if that is sooner than the heartbeat and than a wake already set; `recheck`: to look again at overdue rows. */
  private wakeAt(at: Date, recheck = false): void {
    if (this.status.state !== 'running') return; // a claim that ends after shutdown began arms nothing
    const wait = Math.max(at.getTime() - Date.now(), 1);
    if (wait >= this.config.dispatchPollMs || (this.dueTimer && this.dueAt <= at.getTime())) return;
    clearTimeout(this.dueTimer);
    this.dueAt = at.getTime();
    this.dueIsRecheck = recheck;
    this.dueTimer = setTimeout(() => {
      this.dueTimer = undefined;
      this.wokenByRecheck = this.dueIsRecheck;
      this.wake();
    }, wait);
  }

  /** Logged at most every 5 s: an outage must not flood the log. */
  private reportError(error: unknown): void {
    this.caught.count('claim');
    if (Date.now() - this.lastError < 5000) return;
    this.lastError = Date.now();
    const message = (error as Error)?.message ?? String(error);
    if (isDatabaseUnavailable(error)) this.logger.warn(`database unavailable, producer retrying: ${message}`);
    // Postgres ended the claim for a row a write-back moved under it (40001), or a deadlock: nothing was claimed; the next claim runs as usual.
    else if (transientConflictOf(error)) this.logger.warn(`claim ended by a concurrent update, retrying: ${message}`);
    else this.logger.error(`claim failed, retrying: ${message}`);
  }
}
