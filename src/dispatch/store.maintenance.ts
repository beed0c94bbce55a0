import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../config/app.config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { partitionsAheadMs, partitionWidthMs } from '../retention/partition.policy.js';
import { RetentionService } from '../retention/retention.service.js';
import { TaskRepository } from '../tasks/task.repository.js';
import { TaskRunner } from '../tasks/task.runner.js';
import type { MaintenanceTask } from './maintenance.task.js';
import { MaintenanceRepository } from './maintenance.repository.js';

/** Expired signing secrets, or finished tasks, deleted per statement. */
const DELETE_CHUNK = 1000;

/**
 * The leader's tasks that keep what the service stores within its bounds:
 * - expired secrets (DISPATCH_POLL_MS): signing secrets whose overlap after a rotation ended;
 * - history partitions (RETENTION_PURGE_INTERVAL_MS, or half of how far ahead they are
 *   made if less): made ahead (src/retention), even with retention off;
 * - retention and finished tasks (RETENTION_PURGE_INTERVAL_MS, off when RETENTION_HOURS
 *   is 0): the history's partitions past the window dropped, what finished before it was
 *   partitioned purged, empty batches and finished tasks deleted;
 * - receiver auto-disable (RECEIVER_CHECK_INTERVAL_MS, off when RECEIVER_DISABLE_AFTER_HOURS
 *   is 0): receivers whose every attempt failed that long disabled, their callbacks held.
 */
@Injectable()
export class StoreMaintenance {
  private readonly logger = new Logger('MaintenanceService');

  constructor(
    private readonly config: AppConfig,
    private readonly repo: MaintenanceRepository,
    private readonly retention: RetentionService,
    private readonly taskRows: TaskRepository,
    private readonly runner: TaskRunner,
    private readonly metrics: MetricsService,
  ) {}

  tasks(): MaintenanceTask[] {
    const c = this.config;
    const tasks: MaintenanceTask[] = [
      { name: 'expired secrets', everyMs: c.dispatchPollMs, run: () => this.deleteExpiredSecrets() },
      {
        name: 'history partitions',
        everyMs: Math.min(c.retentionPurgeIntervalMs, partitionsAheadMs(partitionWidthMs(c.retentionHours)) / 2),
        run: () => this.retention.makePartitions(new Date()),
      },
    ];
    if (c.retentionHours > 0) {
      tasks.push({ name: 'retention', everyMs: c.retentionPurgeIntervalMs, run: async () => void (await this.retention.purge()) });
      tasks.push({ name: 'finished tasks', everyMs: c.retentionPurgeIntervalMs, run: () => this.purgeFinishedTasks() });
    }
    if (c.receiverDisableAfterHours > 0) {
      tasks.push({ name: 'receiver auto-disable', everyMs: c.receiverCheckIntervalMs, run: () => this.disableFailingReceivers() });
    }
    return tasks;
  }

  private async deleteExpiredSecrets(): Promise<void> {
    let deleted = 0;
    let n: number;
    do {
      n = await this.repo.deleteExpiredSecrets(DELETE_CHUNK);
      deleted += n;
    } while (n === DELETE_CHUNK);
    if (deleted > 0) this.logger.log(`deleted ${deleted} signing secrets whose overlap period after a rotation ended`);
  }

  /** Finished tasks past RETENTION_HOURS, DELETE_CHUNK per statement. */
  private async purgeFinishedTasks(): Promise<void> {
    while ((await this.taskRows.purgeFinished(this.config.retentionHours, DELETE_CHUNK)) === DELETE_CHUNK);
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
}
