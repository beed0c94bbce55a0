import { Injectable } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Seconds; attempts run from a few ms up to HTTP_MAX_TIMEOUT_MS (120 s). */
const CALL_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
/** Seconds; one claim or write-back statement. */
const SQL_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/**
 * The process's Prometheus metrics. One registry per service instance (not
 * prom-client's global one), so services started side by side in one process, as
 * tests do, count separately. The hot path only increments counters and observes
 * histograms: no I/O, no allocation beyond prom-client's own.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  private readonly attempts = new Counter({
    name: 'callback_attempts_total',
    help: 'Finished call attempts by outcome',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  private readonly attemptSeconds = new Histogram({
    name: 'callback_attempt_duration_seconds',
    help: 'Duration of call attempts (as recorded on the attempt) by outcome',
    labelNames: ['outcome'],
    buckets: CALL_BUCKETS,
    registers: [this.registry],
  });
  private readonly claimSeconds = new Histogram({
    name: 'dispatch_claim_duration_seconds',
    help: 'Duration of one claim statement',
    buckets: SQL_BUCKETS,
    registers: [this.registry],
  });
  private readonly claimedRows = new Counter({
    name: 'dispatch_claimed_rows_total',
    help: 'Callbacks claimed (leased) by this worker',
    registers: [this.registry],
  });
  private readonly writeBackSeconds = new Histogram({
    name: 'dispatch_writeback_duration_seconds',
    help: 'Duration of one write-back statement',
    buckets: SQL_BUCKETS,
    registers: [this.registry],
  });
  private readonly writtenRows = new Counter({
    name: 'dispatch_written_rows_total',
    help: 'Attempt outcomes written back by this worker',
    registers: [this.registry],
  });
  private readonly receiversDisabled = new Counter({
    name: 'receivers_auto_disabled_total',
    help: 'Receivers the service disabled because every attempt failed for RECEIVER_DISABLE_AFTER_HOURS',
    registers: [this.registry],
  });
  private readonly partitionsMade = new Counter({
    name: 'retention_partitions_made_total',
    help: 'History partitions this process made ahead, by table',
    labelNames: ['table'],
    registers: [this.registry],
  });
  private readonly partitionsDropped = new Counter({
    name: 'retention_partitions_dropped_total',
    help: 'History partitions past the retention window this process detached and dropped, by table',
    labelNames: ['table'],
    registers: [this.registry],
  });
  private readonly httpSeconds = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'API requests by method, route pattern and status',
    labelNames: ['method', 'route', 'status'],
    buckets: SQL_BUCKETS,
    registers: [this.registry],
  });

  /** The attempt metrics' children per outcome: prom-client would hash a label object on every call. */
  private readonly attemptsByOutcome = new Map<string, { count: Counter.Internal; seconds: Histogram.Internal<'outcome'> }>();

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** A call finished with `outcome` after `durationMs`. */
  attemptFinished(result: { outcome: string; trace: { durationMs: number } }): void {
    let byOutcome = this.attemptsByOutcome.get(result.outcome);
    if (!byOutcome) {
      byOutcome = { count: this.attempts.labels(result.outcome), seconds: this.attemptSeconds.labels(result.outcome) };
      this.attemptsByOutcome.set(result.outcome, byOutcome);
    }
    byOutcome.count.inc();
    byOutcome.seconds.observe(result.trace.durationMs / 1000);
  }

  /** This process made `n` partitions of `table` (callback or attempt) ahead. */
  partitionsMadeAhead(table: string, n: number): void {
    this.partitionsMade.labels(table).inc(n);
  }

  /** Retention dropped a partition of `table` (callback or attempt). */
  partitionDropped(table: string): void {
    this.partitionsDropped.labels(table).inc();
  }

  /** Runs one claim and records its duration and rows. */
  async timeClaim<T extends unknown[]>(claim: () => Promise<T>): Promise<T> {
    const started = performance.now();
    const rows = await claim();
    this.claimSeconds.observe((performance.now() - started) / 1000);
    this.claimedRows.inc(rows.length);
    return rows;
  }

  /** A write-back statement of `rows` outcomes landed after `ms`. */
  receiverAutoDisabled(): void {
    this.receiversDisabled.inc();
  }

  writeBackDone(rows: number, ms: number): void {
    this.writeBackSeconds.observe(ms / 1000);
    this.writtenRows.inc(rows);
  }

  /** An API request was answered; `route` is the route pattern (bounded), not the URL. */
  httpRequest(method: string, route: string, status: number, seconds: number): void {
    this.httpSeconds.observe({ method, route, status: String(status) }, seconds);
  }

  /** A gauge whose value is set just before each scrape. */
  gauge(name: string, help: string, labelNames: string[] = []): Gauge {
    return new Gauge({ name, help, labelNames, registers: [this.registry] });
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
