import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { Worker } from 'node:worker_threads';
import { AppError } from '../common/app.error.js';
import { AppConfig } from '../config/app.config.js';
import type { Filter } from '../receivers/event-filter.policy.js';

/** Where a payload fails its schema: a JSON Pointer into it (empty for the payload itself) and what is wrong. */
export interface SchemaProblem {
  path: string;
  message: string;
}

type Job = { kind: 'compile'; schema: string } | { kind: 'validate'; schema: string; body: string } | { kind: 'filter'; filters: Filter[]; body: string };
type Answer = { id: number; result?: unknown; refused?: string; failed?: string };

interface Waiting {
  job: Job;
  /** What the check is for, in the 400 when it outruns its budget. */
  what: string;
  resolve: (result: unknown) => void;
  reject: (error: unknown) => void;
}

interface Thread {
  worker: Worker;
  /** Its modules are loaded (it said so): a job's budget starts with the job, not with the thread. */
  ready: boolean;
  /** The job it runs, and the timer of its budget. */
  current?: Waiting & { id: number; timer: NodeJS.Timeout };
}

/** The thread's code: plain ES modules beside this file (copied into dist/ by scripts/build.mjs). */
const WORKER_URL = new URL('./checks/payload-check.worker.mjs', import.meta.url);
/** A thread's heap: a check that needs more ends it, as one that outruns its budget does. */
const THREAD_HEAP_MB = 256;

/**
 * Checks of event payloads that take time the service does not choose (compiling an event
 * type's JSON Schema, validating a payload against it, evaluating the subscribers'
 * filters) run on up to EVENT_CHECK_THREADS worker threads
 * (checks/payload-check.worker.mjs), one job per thread at a time, the others queued in
 * order: the API's event loop (with it `/health/live` and, in role `all`, the dispatch)
 * never waits for them. A job gets EVENT_CHECK_BUDGET_MS from when its thread starts it;
 * one that outruns it ends its thread (`terminate()` stops even a loop that never yields)
 * and is answered 400: the publish or PUT stores nothing. Threads are made as checks wait
 * for one: a process that checks nothing holds none. A thread's load is outside any job's
 * budget; an ended thread is replaced at once, ahead of the next check.
 */
@Injectable()
export class PayloadCheckPool implements OnModuleDestroy {
  private readonly threads: Thread[] = [];
  private readonly queue: Waiting[] = [];
  private nextId = 1;
  private closed = false;

  constructor(private readonly config: AppConfig) {}

  /** Compiles the schema (JSON text) once in a thread: a 400 saying why when it is not one. */
  async compile(schema: string): Promise<void> {
    await this.submit({ kind: 'compile', schema }, 'the schema could not be compiled');
  }

  /** The payload's (JSON text) first problem under the schema, or undefined when it passes. */
  async problemOf(schema: string, body: string, type: string): Promise<SchemaProblem | undefined> {
    const problem = await this.submit({ kind: 'validate', schema, body }, `the payload could not be checked against the schema of ${type}`);
    return (problem as SchemaProblem | null) ?? undefined;
  }

  /** For each filter, whether the payload (JSON text) passes it. */
  async matching(filters: Filter[], body: string): Promise<boolean[]> {
    if (filters.length === 0) return [];
    return (await this.submit({ kind: 'filter', filters, body }, "the receivers' filters could not be evaluated on the payload")) as boolean[];
  }

  /** Threads made and not ended, loading or loaded. */
  get threadCount(): number {
    return this.threads.length;
  }

  onModuleDestroy(): Promise<void> {
    this.closed = true;
    for (const w of this.queue.splice(0)) w.reject(new AppError('not_ready', 'shutting down'));
    return Promise.all(this.threads.splice(0).map((t) => t.worker.terminate())).then(() => undefined);
  }

  private submit(job: Job, what: string): Promise<unknown> {
    if (this.closed) return Promise.reject(new AppError('not_ready', 'shutting down'));
    return new Promise((resolve, reject) => {
      this.queue.push({ job, what, resolve, reject });
      this.pump();
    });
  }

  /** Starts queued jobs on idle threads, making threads up to EVENT_CHECK_THREADS (a new one takes jobs once it is ready). */
  private pump(): void {
    while (this.queue.length > 0) {
      const thread = this.threads.find((t) => t.ready && !t.current);
      if (!thread) {
        const starting = this.threads.filter((t) => !t.ready).length;
        if (starting < this.queue.length && this.threads.length < this.config.eventCheckThreads) this.spawn();
        return;
      }
      this.start(thread, this.queue.shift()!);
    }
  }

  private spawn(): Thread {
    const worker = new Worker(WORKER_URL, { resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB } });
    worker.unref(); // an idle thread keeps no process alive
    const thread: Thread = { worker, ready: false };
    worker.on('message', (a: Answer | { ready: true }) => {
      if ('ready' in a) {
        thread.ready = true;
        this.pump();
      } else this.answered(thread, a);
    });
    // a thread that dies (out of memory, or an error outside a job) fails its job; the next job gets a new thread
    worker.on('error', (error) => this.end(thread, new AppError('validation_failed', `${thread.current?.what ?? 'a check'} failed: ${error.message}`)));
    worker.on('exit', () => this.end(thread, new AppError('validation_failed', `${thread.current?.what ?? 'a check'} failed: its thread stopped`)));
    this.threads.push(thread);
    return thread;
  }

  private start(thread: Thread, w: Waiting): void {
    const id = this.nextId++;
    const budget = this.config.eventCheckBudgetMs;
    const timer = setTimeout(() => {
      this.end(
        thread,
        new AppError(
          'validation_failed',
          `${w.what} within ${budget} ms (EVENT_CHECK_BUDGET_MS), so nothing was stored: it costs too much for this payload ` +
            '(uniqueItems over arrays of objects, or enums of many objects, compare every pair)',
        ),
      );
    }, budget);
    thread.current = { ...w, id, timer };
    thread.worker.postMessage({ id, ...w.job });
  }

  private answered(thread: Thread, a: Answer): void {
    const w = thread.current;
    if (!w || w.id !== a.id) return;
    clearTimeout(w.timer);
    thread.current = undefined;
    if (a.refused !== undefined) w.reject(new AppError('validation_failed', a.refused));
    else if (a.failed !== undefined) w.reject(new AppError('validation_failed', `${w.what}: ${a.failed}`));
    else w.resolve(a.result);
    this.pump();
  }

  /** Fails the thread's job (if any) with `error`, ends the thread, and lets the queue go on with a new one. */
  private end(thread: Thread, error: AppError): void {
    const i = this.threads.indexOf(thread);
    if (i < 0) return;
    this.threads.splice(i, 1);
    const w = thread.current;
    thread.current = undefined;
    if (w) {
      clearTimeout(w.timer);
      w.reject(error);
    }
    void thread.worker.terminate();
    if (this.closed) return;
    // a thread that could not even load (its code missing, say) would fail every new one alike: fail what waits
    if (!thread.ready) {
      for (const q of this.queue.splice(0)) q.reject(error);
      return;
    }
    this.spawn(); // its replacement, loading while nothing waits for it
    this.pump();
  }
}
