import { Injectable, Logger } from '@nestjs/common';
import { CaughtErrors } from '../logging/caught-errors.js';
import { AppConfig } from '../config/app.config.js';
import { isDatabaseUnavailable } from '../database/database.errors.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { partitionsAheadMs, partitionWidthMs } from '../retention/partition.policy.js';
import { RetentionService } from '../retention/retention.service.js';
import { TaskRepository } from '../tasks/task.repository.js';
import { TaskRunner } from '../tasks/task.runner.js';
import { WorkerStatus } from '../worker-status/worker-status.service.js';
import { logBatchesCompleted } from './completer.service.js';
import { HostLimitsRepository } from './host-limits/host-limits.repository.js';
import { LeaderLock } from './leader.lock.js';
import { MaintenanceRepository } from './maintenance.repository.js';
import { ProducerService } from './producer.service.js';

/** A key's breaker at a host that nobody wrote for this long, its pause over, is deleted: its key sends nothing there any more. */
const KEY_BREAKER_IDLE_MS = 3_600_000;
/** Open batches the sweep stamps per run at most. */
const SWEEP_BATCHES = 100;
/** Expired signing secrets, or finished tasks, deleted per statement. */
const SECRETS_CHUNK = 1000;

interface Task {
  name: string;
  everyMs: number;
  run: () => Promise<void>;
}

/**
 * Housekeeping that one worker at a time does for all (the leader: LeaderLock),
 * each task on its own interval:
 * - lease reaper (DISPATCH_POLL_MS): rows of crashed workers, lease run out, back to
 *   pending, due now;
 * - batch sweep (DISPATCH_POLL_MS): stamps batches whose last write-back died before
 *   the stamp (with their batch.completed operator events);
 * - settled recoveries (DISPATCH_POLL_MS): recovery.completed operator events of
 *   recoveries whose requeued callbacks have all settled;
 * - expired secrets (DISPATCH_POLL_MS): deletes signing secrets whose overlap period
 *   after a rotation ended, SECRETS_CHUNK per statement;
 * - idle tasks (DISPATCH_POLL_MS): runs on the tasks (src/tasks) whose runner stopped
 *   (its process died) for TASK_RESUME_AFTER_MS;
 * - idle key breakers (HOST_BREAKER_COOLDOWN_MS): deletes keys' breakers at hosts
 *   (host_key_breaker) unwritten for KEY_BREAKER_IDLE_MS whose pause is over, so the
 *   rows every claim reads stay few;
 * - history partitions (RETENTION_PURGE_INTERVAL_MS, or half of how far ahead they are
 *   made if less): makes the history's time partitions ahead (src/retention) even with retention off;
 * - retention (RETENTION_PURGE_INTERVAL_MS, off when RETENTION_HOURS is 0): drops the
 *   history's partitions past the retention window, purges what finished before it was
 *   partitioned and empty batches, and finished tasks;
 * - receiver auto-disable (RECEIVER_CHECK_INTERVAL_MS, off when
 *   RECEIVER_DISABLE_AFTER_HOURS is 0): disables receivers whose every attempt failed
 *   for that long, holding their callbacks until someone enables them again.
 * A worker that does not lead tries to take the lead at each reaper interval, so a
 * dead leader is replaced within one. Each worker's own in-memory duties (handing
 * back rows that waited too long) stay with its producer.
 */
@Injectable()
export class MaintenanceService {
  private readonly logger = new Logger(MaintenanceService.name);
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly running = new Set<Promise<void>>();
  /** Tasks with a run under way, by name. */
  private readonly busy = new Set<string>();
  private lastError = 0;

  constructor(
    private readonly config: AppConfig,
    private readonly repo: MaintenanceRepository,
    private readonly lock: LeaderLock,
    private readonly retention: RetentionService,
    private readonly producer: ProducerService,
    private readonly status: WorkerStatus,
    private readonly metrics: MetricsService,
    private readonly caught: CaughtErrors,
    private readonly runner: TaskRunner,
    private readonly taskRows: TaskRepository,
    private readonly hostLimits: HostLimitsRepository,
  ) {}

  private tasks(): Task[] {
    const tasks: Task[] = [
      { name: 'lease reaper', everyMs: this.config.dispatchPollMs, run: () => this.reap() },
      { name: 'batch sweep', everyMs: this.config.dispatchPollMs, run: () => this.sweep() },
      { name: 'settled recoveries', everyMs: this.config.dispatchPollMs, run: async () => void (await this.repo.notifySettledRecoveries()) },
      { name: 'expired secrets', everyMs: this.config.dispatchPollMs, run: () => this.deleteExpiredSecrets() },
      { name: 'idle tasks', everyMs: this.config.dispatchPollMs, run: async () => void (await this.runner.resumeIdle()) },
      {
        name: 'idle key breakers',
        everyMs: this.config.hostBreakerCooldownMs,
        run: async () => void (await this.hostLimits.deleteIdleKeyBreakers(KEY_BREAKER_IDLE_MS)),
      },
    ];
    tasks.push({
      name: 'history partitions',
      everyMs: Math.min(this.config.retentionPurgeIntervalMs, partitionsAheadMs(partitionWidthMs(this.config.retentionHours)) / 2),
      run: () => this.retention.makePartitions(new Date()),
    });
    if (this.config.retentionHours > 0) {
      tasks.push({ name: 'retention', everyMs: this.config.retentionPurgeIntervalMs, run: async () => void (await this.retention.purge()) });
      tasks.push({ name: 'finished tasks', everyMs: this.config.retentionPurgeIntervalMs, run: () => this.purgeFinishedTasks() });
    }
    if (this.config.receiverDisableAfterHours > 0) {
      tasks.push({ name: 'receiver auto-disable', everyMs: this.config.receiverCheckIntervalMs, run: () => this.disableFailingReceivers() });
    }
    return tasks;
  }

  /** Starts the tasks' timers; the first reaper run (and the first try for the lead) is now. */
  start(): void {
    for (const task of this.tasks()) {
      this.timers.push(setInterval(() => this.runTask(task), task.everyMs));
      if (task.name === 'lease reaper') this.runTask(task);
    }
  }

  /** Stops the timers, waits for the tasks under way, and hands the lead on. */
  async stop(): Promise<void> {
    this.timers.splice(0).forEach(clearInterval);
    await Promise.all(this.running);
    await this.lock.release();
    this.status.leader = false;
  }

  private runTask(task: Task): void {
    // A run that outlasts its interval is not joined by the next: runs of one task at
    // once would take connections the dispatch needs and repeat each other's work.
    if (this.busy.has(task.name)) return;
    this.busy.add(task.name);
    const run = this.lead()
      .then(async (leads) => {
        if (leads) await task.run();
      })
      .catch((error) => this.reportError(task.name, error))
      .finally(() => {
        this.running.delete(run);
        this.busy.delete(task.name);
      });
    this.running.add(run);
  }

  private async lead(): Promise<boolean> {
    const leads = await this.lock.lead();
    this.status.leader = leads;
    if (!leads) this.status.markHealthy(); // the try was a round trip to the database
    return leads;
  }

  private async reap(): Promise<void> {
    const { due, failed } = await this.repo.reapExpiredLeases();
    this.status.markHealthy();
    if (failed > 0) this.logger.warn(`${failed} callbacks failed for good: their worker stopped during their last attempt (lease ran out)`);
    if (due > 0) {
      this.logger.log(`${due} callbacks whose lease ran out (their worker stopped) are due again, the lost attempt counted`);
      this.producer.wake();
    }
  }

  private async sweep(): Promise<void> {
    logBatchesCompleted(this.logger, await this.repo.sweepCompletedBatches(SWEEP_BATCHES));
  }

  private async deleteExpiredSecrets(): Promise<void> {
    let deleted = 0;
    let n: number;
    do {
      n = await this.repo.deleteExpiredSecrets(SECRETS_CHUNK);
      deleted += n;
    } while (n === SECRETS_CHUNK);
    if (deleted > 0) this.logger.log(`deleted ${deleted} signing secrets whose overlap period after a rotation ended`);
  }

  /** Finished tasks past RETENTION_HOURS, 1,000 per statement. */
  private async purgeFinishedTasks(): Promise<void> {
    while ((await this.taskRows.purgeFinished(this.config.retentionHours, SECRETS_CHUNK)) === SECRETS_CHUNK);
  }

  private async disableFailingReceivers(): Promise<void> {
    const hours = this.config.receiverDisableAfterHours;
    const reason = `every attempt failed for ${hours} h (RECEIVER_DISABLE_AFTER_HOURS); its callbacks are held until it is enabled`;
    for (const r of await this.repo.disableFailingReceivers(hours, reason)) {
      await this.runner.start(r.taskId, 0); // one chunk now, the rest behind it
      this.metrics.receiverAutoDisabled();
      this.logger.warn({
        msg: `receiver ${r.name} disabled: every attempt failed since ${r.failingSince.toISOString()}`,
        event: 'receiver_disabled',
        receiver: r.name,
        apiKeyId: r.apiKeyId,
      });
    }
  }

  /** Logged at most every 5 s: an outage must not flood the log. */
  private reportError(task: string, error: unknown): void {
    this.caught.count(`maintenance_${task.replace(/[^a-z]+/g, '_')}`);
    if (Date.now() - this.lastError < 5000) return;
    this.lastError = Date.now();
    const message = (error as Error)?.message ?? String(error);
    if (isDatabaseUnavailable(error)) this.logger.warn(`database unavailable, ${task} retrying: ${message}`);
    else this.logger.error(`${task} failed, retrying: ${message}`);
  }
}
