import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app.config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { WorkerStatus } from '../worker-status/worker-status.service.js';
import { CompleterService } from './completer.service.js';
import { HostLimitsService } from '../hosts/limits/host-limits.service.js';
import type { QueuedCallback } from './call.preparation.js';
import { ProducerService } from './producer.service.js';
import { AttemptMaker } from './attempt.maker.js';

/** Calls started per turn of the event loop (see fill). */
const START_SLICE = 32;

/**
 * Step 2: the sender keeps at most DISPATCH_CONCURRENCY calls in flight, taking
 * rows from the producer's queues (round-robin over hosts below their cap), each
 * completion replaced at once by the next waiting row: a rolling window. Each call
 * is built (request.builder.ts: headers, Standard Webhooks signature; after its
 * receiver's transform, when it has one: transform.step.ts) and sent through
 * HttpService (transport/) with its receiver's credentials (auth/authorized.sender.ts),
 * added last, so a transform neither sees nor sets them; its result goes to the host
 * limits (breaker) and, as an outcome, to the completer.
 */
@Injectable()
export class SenderService {
  private readonly sending = new Set<QueuedCallback>();
  private continueStarting?: NodeJS.Immediate;
  private idle?: () => void;

  constructor(
    private readonly config: AppConfig,
    private readonly producer: ProducerService,
    private readonly completer: CompleterService,
    private readonly attempts: AttemptMaker,
    private readonly hostLimits: HostLimitsService,
    private readonly metrics: MetricsService,
    private readonly status: WorkerStatus,
  ) {
    producer.onQueued(() => this.fill());
  }

  get inFlight(): number {
    return this.sending.size;
  }

  /**
   * Fills the window from the waiting queues, at most START_SLICE calls per turn of
   * the event loop. Starting a whole claim (hundreds of calls) in one synchronous
   * run keeps the responses already on the wire waiting unread, and that wait would
   * land in their recorded durations; between slices they are read.
   */
  fill(): void {
    for (let started = 0; this.sending.size < this.config.dispatchConcurrency; started++) {
      if (started === START_SLICE) {
        this.continueStarting ??= setImmediate(() => {
          this.continueStarting = undefined;
          if (this.status.state === 'running') this.fill();
        });
        return;
      }
      const row = this.producer.take();
      if (!row) return;
      this.sending.add(row);
      void this.send(row);
    }
  }

  /** Resolves when no call is in flight, or at `deadline` (ms since epoch). */
  async drain(deadline: number): Promise<void> {
    if (this.sending.size === 0) return;
    await new Promise<void>((resolve) => {
      this.idle = resolve;
      setTimeout(resolve, Math.max(0, deadline - Date.now())).unref();
    });
  }

  /** The calls still in flight (after the deadline: the worker hands them back; their results are not recorded). */
  stillSending(): QueuedCallback[] {
    return [...this.sending];
  }

  private async send(row: QueuedCallback): Promise<void> {
    const done = await this.attempts.make(row);
    // Past the shutdown deadline the row was handed back (and the call cut off): not ours to record.
    if (this.status.state === 'stopped') return;
    this.sending.delete(row);
    this.producer.done(row.host);
    if (done.result) {
      if (done.called) this.hostLimits.record(row, done.result);
      this.metrics.attemptFinished(done.result);
    }
    this.completer.add(done.outcome);
    // This worker holds every slot of the host (calls, waiting rows, outcomes not yet
    // written): slots come free only when written back (which wakes the claim). Write
    // as soon as the host's last call is done, so one write-back and one claim move a
    // whole cap's worth; until then the write-back interval applies, as for any host.
    // Writing at the first finished call split each cycle into pieces of ~10 rows at
    // cap 20 (two statements each), and a split cycle stayed split.
    const load = this.producer.hostLoad(row.host);
    if (load.inFlight === 0 && load.queued + this.completer.pendingFor(row.host) >= this.hostLimits.capFor(row.host)) {
      this.completer.flushSoon();
    }
    if (this.status.state === 'draining') {
      if (this.sending.size === 0) this.idle?.();
      return;
    }
    this.fill();
    // Otherwise a finished call frees nothing a claim could use: host slots come
    // free with the write-back, which wakes the claim itself.
    this.producer.callFinished();
  }
}
