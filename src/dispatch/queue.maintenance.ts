import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../config/app.config.js';
import { TaskRunner } from '../tasks/task.runner.js';
import { WorkerStatus } from '../worker-status/worker-status.service.js';
import { logBatchesCompleted } from './completer.service.js';
import { HostLimitsRepository } from '../hosts/limits/host-limits.repository.js';
import type { MaintenanceTask } from './maintenance.task.js';
import { MaintenanceRepository } from './maintenance.repository.js';
import { ProducerService } from './producer.service.js';

/** A key's breaker at a host that nobody wrote for this long, its pause over, is deleted: its key sends nothing there any more. */
const KEY_BREAKER_IDLE_MS = 3_600_000;
/** Open batches the sweep stamps per run at most. */
const SWEEP_BATCHES = 100;

/**
 * The leader's tasks that keep the queue moving:
 * - lease reaper (DISPATCH_POLL_MS): rows of crashed workers, lease run out, due again;
 * - batch sweep (DISPATCH_POLL_MS): stamps batches whose last write-back died before
 *   the stamp (with their batch.completed operator events);
 * - settled recoveries (DISPATCH_POLL_MS): recovery.completed operator events of
 *   recoveries whose requeued callbacks have all settled;
 * - idle tasks (DISPATCH_POLL_MS): runs on the tasks whose runner stopped (its process
 *   died) for TASK_RESUME_AFTER_MS;
 * - idle key breakers (HOST_BREAKER_COOLDOWN_MS): deletes keys' breakers unwritten for
 *   KEY_BREAKER_IDLE_MS whose pause is over, so the rows every claim reads stay few.
 */
@Injectable()
export class QueueMaintenance {
  private readonly logger = new Logger('MaintenanceService');

  constructor(
    private readonly config: AppConfig,
    private readonly repo: MaintenanceRepository,
    private readonly producer: ProducerService,
    private readonly status: WorkerStatus,
    private readonly runner: TaskRunner,
    private readonly hostLimits: HostLimitsRepository,
  ) {}

  tasks(): MaintenanceTask[] {
    const every = this.config.dispatchPollMs;
    return [
      { name: 'lease reaper', everyMs: every, run: () => this.reap() },
      { name: 'batch sweep', everyMs: every, run: async () => logBatchesCompleted(this.logger, await this.repo.sweepCompletedBatches(SWEEP_BATCHES)) },
      { name: 'settled recoveries', everyMs: every, run: async () => void (await this.repo.notifySettledRecoveries()) },
      { name: 'idle tasks', everyMs: every, run: async () => void (await this.runner.resumeIdle()) },
      {
        name: 'idle key breakers',
        everyMs: this.config.hostBreakerCooldownMs,
        run: async () => void (await this.hostLimits.deleteIdleKeyBreakers(KEY_BREAKER_IDLE_MS)),
      },
    ];
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
}
