import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { AppConfig } from '../config/app.config.js';
import { WorkerStatus } from '../worker-status/worker-status.service.js';
import { CompleterService } from './completer.service.js';
import { MaintenanceService } from './maintenance.service.js';
import { NotifyListener } from '../database/notify.listener.js';
import { ProducerService } from './producer.service.js';
import { SenderService } from './sender.service.js';

/**
 * The worker of this process (ROLE=worker or all): starts its roles and stops them
 * in order. A claimed row goes producer → sender → completer; maintenance runs on
 * the side, on one worker at a time.
 *
 * Invariant: a row is waiting in the producer or in flight in the sender only while
 * this worker holds its lease, and it leaves the worker exactly once, through the
 * completer: as an outcome written back, or handed back untouched.
 */
@Injectable()
export class WorkerService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(WorkerService.name);

  constructor(
    private readonly config: AppConfig,
    private readonly producer: ProducerService,
    private readonly sender: SenderService,
    private readonly completer: CompleterService,
    private readonly maintenance: MaintenanceService,
    private readonly status: WorkerStatus,
    private readonly notify: NotifyListener,
  ) {
    status.reportWindow(() => ({ inFlight: sender.inFlight, queued: producer.queued, unwritten: completer.pending }));
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.role === 'api') return;
    await this.warmUp();
    this.status.state = 'running';
    // An ingest's commit is announced by NOTIFY (NotifyListener): the producer claims at once.
    await this.notify.listen((priority) => this.producer.wakeFor(priority));
    this.producer.start();
    this.maintenance.start();
    this.logger.log(`worker ${this.status.owner} started: window ${this.config.dispatchConcurrency}, per host ${this.config.hostMaxInFlight}`);
  }

  /**
   * Runs every hot-path statement once on no rows before the first real claim: a
   * cold first run (query compilation, JIT) blocks the event loop for tens of
   * milliseconds, which would land in the recorded durations of the first batch.
   * Nothing else is warmed: a pipeline warm-up of made-up calls helped only a fresh
   * worker's first ~20,000 callbacks and nothing measurable on steady traffic
   * (bench/README.md, "2026-12-03: the pipeline warm-up goes").
   */
  private async warmUp(): Promise<void> {
    try {
      await this.producer.warmUp();
      await this.completer.warmUp();
      // Its statements just ran: ready from the start, not from the first claim or maintenance step.
      this.status.markHealthy();
    } catch (error) {
      // The database is away: the loops retry (and say so) once started.
      this.logger.warn(`warm-up skipped: ${(error as Error).message}`);
    }
  }

  /**
   * Graceful stop (SIGTERM): claim nothing more, hand back what waits in memory,
   * let in-flight calls finish until SHUTDOWN_GRACE_MS, write every outcome back.
   * Calls still running at the deadline are handed back too (they may be sent
   * again later, with the same webhook-id), and the transport then cuts them off.
   */
  async onModuleDestroy(): Promise<void> {
    if (this.status.state !== 'running') return;
    this.status.state = 'draining';
    const deadline = Date.now() + this.config.shutdownGraceMs;
    await this.producer.stop(deadline);
    await this.completer.release(this.producer.removeWaiting());
    await this.sender.drain(deadline);
    // the last write-back gets half of SHUTDOWN_OVERRUN_MS, at most 5 s, before the process exits anyway (main.ts)
    await this.completer.drain(deadline + Math.min(5000, this.config.shutdownOverrunMs / 2));
    this.status.state = 'stopped';
    const cut = this.sender.stillSending();
    if (cut.length > 0) this.logger.warn(`${cut.length} calls still in flight at the shutdown deadline; handing them back to be sent again`);
    // Calls cut off at the deadline, and rows a late claim brought in.
    await this.completer.release([...cut, ...this.producer.removeWaiting()]);
    await this.maintenance.stop();
  }
}
