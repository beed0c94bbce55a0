import { Injectable, Logger } from '@nestjs/common';
import { CaughtErrors } from '../logging/caught-errors.js';
import { isDatabaseUnavailable } from '../database/database.errors.js';
import { WorkerStatus } from '../worker-status/worker-status.service.js';
import { LeaderLock } from './leader.lock.js';
import type { MaintenanceTask } from './maintenance.task.js';
import { QueueMaintenance } from './queue.maintenance.js';
import { StoreMaintenance } from './store.maintenance.js';

/**
 * Housekeeping that one worker at a time does for all (the leader: LeaderLock), each
 * task on its own interval: the queue's (QueueMaintenance: lease reaper, batch sweep,
 * settled recoveries, idle tasks, idle key breakers) and the stored records'
 * (StoreMaintenance: expired secrets, history partitions, retention, finished tasks,
 * receiver auto-disable). A worker that does not lead tries to take the lead at each
 * reaper interval, so a dead leader is replaced within one. Each worker's own in-memory
 * duties (handing back rows that waited too long) stay with its producer.
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
    private readonly lock: LeaderLock,
    private readonly status: WorkerStatus,
    private readonly caught: CaughtErrors,
    private readonly queue: QueueMaintenance,
    private readonly store: StoreMaintenance,
  ) {}

  /** Starts the tasks' timers; the first reaper run (and the first try for the lead) is now. */
  start(): void {
    for (const task of [...this.queue.tasks(), ...this.store.tasks()]) {
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

  private runTask(task: MaintenanceTask): void {
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
