import { DynamicModule, Global, Injectable, Logger, Module } from '@nestjs/common';

/** A place logs the same caught error at most this often (an outage must not flood the log); every one is counted. */
const LOG_EVERY_MS = 5_000;

/**
 * Errors the service catches and carries on from, counted by where they were caught:
 * `errors_total{where}` on /metrics (MetricsCollector). None passes unseen: each is
 * counted, and logged with its place and what happens instead (`record`), or by the
 * place's own log line (`count`). Errors meant to be ignored (closing a connection
 * that is already broken, a parse that becomes a 400) say why where they are caught.
 */
@Injectable()
export class CaughtErrors {
  private readonly logger = new Logger(CaughtErrors.name);
  private readonly counts = new Map<string, number>();
  private readonly loggedAt = new Map<string, number>();

  /** `error` caught at `where`; `instead`: what the service does now (e.g. "retrying"). Counted, and logged as a warning. */
  record(where: string, error: unknown, instead: string): void {
    const n = this.count(where);
    const now = Date.now();
    if (now - (this.loggedAt.get(where) ?? Number.NEGATIVE_INFINITY) < LOG_EVERY_MS) return;
    this.loggedAt.set(where, now);
    const message = error instanceof Error ? error.message : String(error);
    this.logger.warn({ msg: `${where}: ${message}; ${instead}`, event: 'error_caught', where, error: message, count: n });
  }

  /** Counts an error caught at `where` that the place logs itself; returns the count so far. */
  count(where: string): number {
    const n = (this.counts.get(where) ?? 0) + 1;
    this.counts.set(where, n);
    return n;
  }

  /** Errors caught so far, by place. */
  get byPlace(): ReadonlyMap<string, number> {
    return this.counts;
  }
}

/** CaughtErrors for every module: the database pools count their own. */
@Global()
@Module({})
export class CaughtErrorsModule {
  static register(): DynamicModule {
    return { module: CaughtErrorsModule, providers: [CaughtErrors], exports: [CaughtErrors] };
  }
}
