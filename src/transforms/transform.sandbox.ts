import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { AppConfig } from '../config/app.config.js';
import type { SandboxError, SandboxInput } from './transform.policy.js';

/** One run of a transform: its key (receiver id and code hash: TransformService.keyOf), its source, and its input. */
export interface SandboxJob extends SandboxInput {
  key: string;
  code: string;
}

/** What a run answered: the sandbox's text (null: the handler returned null), or its error. */
export type SandboxAnswer = { text: string | null; error?: undefined } | { error: SandboxError; text?: undefined };

/** A compiled WebAssembly module (the lib this project compiles against has no WebAssembly types): handed to threads as it is. */
type CompiledWasm = object;
declare const WebAssembly: { compile(bytes: Uint8Array): Promise<CompiledWasm> };

type Pending = SandboxJob & { id: number; compileOnly?: boolean; resolve: (a: SandboxAnswer) => void };

/** Jobs one message carries to a thread, at most. */
const BATCH_MAX = 64;
/** A batch stops taking jobs once their expected run time reaches this (takeBatch). */
const BATCH_MS = 10;
/** Transforms whose run times are remembered; past it the memory starts afresh. */
const COSTS_MAX = 10_000;
/** A call still running at this many times its budget (plus WATCHDOG_SLACK_MS) ends its thread. */
const WATCHDOG_FACTOR = 2;
const WATCHDOG_SLACK_MS = 20;
/** A thread that does not start within this is given up on and started again. */
const START_TIMEOUT_MS = 30_000;

/** The sandbox's thread: beside this module, in the sources and in dist/ (copied there by scripts/build.mjs). */
const WORKER_URL = new URL('./sandbox.worker.mjs', import.meta.url);

/** One thread of the sandbox, with the batch it runs. */
class SandboxThread {
  readonly worker: Worker;
  /** [start of the call under way (epoch ms, 0: none), its budget (ms), its job's id], written by the thread. */
  readonly running: BigInt64Array;
  readonly ready: Promise<void>;
  /** The jobs of the message it works on; empty while idle. */
  batch: Pending[] = [];
  /** Ended by the watchdog (not by a crash of its own). */
  cut = false;
  /** Ended before the pool took it (a spare that crashed waiting). */
  exitedEarly = false;

  constructor(wasmModule: CompiledWasm, config: AppConfig) {
    const status = new SharedArrayBuffer(24);
    this.running = new BigInt64Array(status);
    this.worker = new Worker(WORKER_URL, {
      workerData: {
        wasmModule,
        status,
        memoryBytes: config.transformMemoryMb * 1024 * 1024,
        cacheSize: config.transformCacheSize,
        // characters, of the webhook as JSON: never fewer than its bytes
        maxOutputChars: config.transformMaxOutputBytes,
      },
    });
    this.ready = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the sandbox thread did not start')), START_TIMEOUT_MS);
      this.worker.once('message', () => {
        clearTimeout(timer);
        resolve();
      });
      this.worker.once('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
    });
  }

  /** How long the call under way has run, and its budget; undefined when none runs. */
  callUnderWay(now: number): { ms: number; budgetMs: number; id: number } | undefined {
    // The thread writes id, budget, then start (and start 0 when done): read in the other
    // order, a step that changed meanwhile shows as two ids, and is looked at next time.
    const id = this.running[2];
    const started = Number(this.running[0]);
    const budgetMs = Number(this.running[1]);
    if (started === 0 || this.running[2] !== id) return undefined;
    return { ms: now - started, budgetMs, id: Number(id) };
  }
}

/**
 * Runs receivers' transforms in QuickJS (WebAssembly) on threads of their own
 * (TRANSFORM_THREADS, started at the first transform; sandbox.worker.mjs holds the
 * isolation and the compiled transforms): the service's event loop never runs a
 * receiver's code, so an endless loop or a memory bomb costs the sending of other
 * callbacks nothing, only the thread's time, bounded per call by TRANSFORM_TIMEOUT_MS.
 * Jobs queue per transform and go to an idle thread as one message, taken round-robin
 * across transforms up to about BATCH_MS of expected run time (takeBatch), so a transform
 * that spends its whole budget each call delays another by about one budget, not its
 * whole backlog. A thread answers a batch once it is done. A watchdog (watch) ends a
 * thread whose call overruns.
 */
@Injectable()
export class TransformSandbox implements OnApplicationShutdown {
  private readonly logger = new Logger(TransformSandbox.name);
  private wasmModule?: Promise<CompiledWasm>;
  private threads: Array<SandboxThread | undefined> = [];
  private starting: Array<Promise<SandboxThread> | undefined> = [];
  /**
   * A thread started ahead, ready to take the place of one the watchdog ends: made at
   * the first cut (a process whose transforms never overrun has none), and again each
   * time one is taken, so a hostile transform's cuts do not each stall every transform
   * for a thread's start.
   */
  private spare?: Promise<SandboxThread>;
  /** The spare once ready (spareReady). */
  private spareThread?: SandboxThread;
  /** Waiting jobs by transform key, in round-robin order (Map order; a key re-added goes last). */
  private readonly queues = new Map<string, Pending[]>();
  private queued = 0;
  /** Each transform's expected run time, ms (takeBatch). */
  private readonly costs = new Map<string, number>();
  private nextId = 1;
  private watchdog?: NodeJS.Timeout;
  private stopped = false;
  /** Threads ended by the watchdog since start (metrics, tests). */
  threadsEnded = 0;

  constructor(private readonly config: AppConfig) {}

  /** Runs a transform on one input. */
  run(job: SandboxJob): Promise<SandboxAnswer> {
    return new Promise((resolve) => this.enqueue({ ...job, id: this.nextId++, resolve }));
  }

  /** Compiles `code` (and keeps it compiled under `key`): its error when it does not compile or define a handler. */
  async check(key: string, code: string): Promise<SandboxError | undefined> {
    const answer = await new Promise<SandboxAnswer>((resolve) =>
      this.enqueue({ key, code, envelope: '', body: null, json: false, id: this.nextId++, compileOnly: true, resolve }),
    );
    return answer.error;
  }

  /** Forgets compiled transforms (a receiver's code changed): each thread drops them after the batch it runs. */
  drop(keys: string[]): void {
    if (keys.length === 0) return;
    for (const t of this.threads) t?.worker.postMessage({ drop: keys });
  }

  /** Jobs waiting and running (tests, metrics). */
  get backlog(): number {
    return this.queued + this.running;
  }

  /** Jobs handed to a thread and not answered yet. */
  get running(): number {
    return this.threads.reduce((n, t) => n + (t?.batch.length ?? 0), 0);
  }

  /** Whether a spare thread is started and ready to take the place of one the watchdog ends. */
  get spareReady(): boolean {
    return this.spareThread !== undefined;
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearInterval(this.watchdog);
    const engine: SandboxError = { kind: 'engine', name: 'Error', message: 'the service is stopping', stack: '' };
    for (const q of this.queues.values()) for (const p of q) p.resolve({ error: engine });
    this.queues.clear();
    await Promise.all(
      this.threads.map(async (t) => {
        if (!t) return;
        for (const p of t.batch) p.resolve({ error: engine });
        await t.worker.terminate();
      }),
    );
    const spare = await this.spare?.catch(() => undefined);
    await spare?.worker.terminate();
  }

  private enqueue(p: Pending): void {
    if (this.stopped) return p.resolve({ error: { kind: 'engine', name: 'Error', message: 'the service is stopping', stack: '' } });
    const q = this.queues.get(p.key);
    if (q) q.push(p);
    else this.queues.set(p.key, [p]);
    this.queued++;
    this.pump();
  }

  /** Hands a batch to every idle thread, starting threads as needed. */
  private pump(): void {
    for (let i = 0; i < this.config.transformThreads && this.queued > 0; i++) {
      const thread = this.threads[i];
      if (!thread) {
        void this.start(i);
        continue;
      }
      if (thread.batch.length > 0) continue;
      const batch = this.takeBatch();
      thread.batch = batch;
      thread.worker.postMessage({ jobs: batch.map(({ resolve: _, ...job }) => ({ ...job, budgetMs: this.config.transformTimeoutMs })) });
      this.watch();
    }
  }

  /**
   * The next batch: rounds of one job of each waiting transform (in queue order; a
   * transform with more waiting goes to the back), until BATCH_MAX jobs or BATCH_MS of
   * their expected run time (each transform's recent runs: `costs`). So a job queued
   * now waits for about BATCH_MS of others' runs, or one slow run, not for a batch of
   * one transform's budget-long runs.
   */
  private takeBatch(): Pending[] {
    const batch: Pending[] = [];
    let expectedMs = 0;
    while (batch.length < BATCH_MAX && expectedMs < BATCH_MS && this.queues.size > 0) {
      for (const key of [...this.queues.keys()]) {
        const q = this.queues.get(key)!;
        batch.push(q.shift()!);
        this.queued--;
        // a transform not run yet may take its whole budget: it runs alone until its time is known
        expectedMs += this.costs.get(key) ?? BATCH_MS;
        this.queues.delete(key);
        if (q.length > 0) this.queues.set(key, q);
        if (batch.length === BATCH_MAX || expectedMs >= BATCH_MS) break;
      }
    }
    return batch;
  }

  /** Folds a run's time into its transform's expected run time (a moving average). */
  private cost(key: string, ms: number): void {
    if (this.costs.size >= COSTS_MAX) this.costs.clear();
    const before = this.costs.get(key);
    this.costs.set(key, before === undefined ? ms : 0.7 * before + 0.3 * ms);
  }

  private start(i: number): Promise<SandboxThread> {
    const started = (this.starting[i] ??= (async () => {
      const spare = this.spare;
      this.spare = undefined;
      this.spareThread = undefined;
      let thread = spare && (await spare.catch(() => undefined));
      // A thread that fails to start (a busy or short machine) is started once more
      // before the transforms waiting for it fail.
      if (!thread || thread.exitedEarly) thread = await this.newThread().catch(() => this.newThread());
      // a spare was needed: another cut is likely (the same hostile transform), so the next one is made ready now
      if (spare) this.makeSpare();
      const taken = thread;
      taken.worker.on('message', (m: { results?: Array<{ id: number; ms: number } & SandboxAnswer> }) => m.results && this.answered(i, taken, m.results));
      taken.worker.on('exit', () => this.exited(i, taken));
      this.threads[i] = taken;
      return taken;
    })());
    started
      .then(() => {
        this.starting[i] = undefined;
        this.pump();
      })
      .catch((e: unknown) => {
        this.starting[i] = undefined;
        this.logger.error(`transform thread did not start: ${messageOf(e)}`);
        this.failAll(`the sandbox did not start: ${messageOf(e)}`);
      });
    return started;
  }

  /** Starts the spare; a failure to start shows when it is taken (a new thread is made then). */
  private makeSpare(): void {
    if (this.stopped) return;
    const spare = (this.spare = this.newThread());
    spare.then(
      (thread) => {
        if (this.spare === spare) this.spareThread = thread;
      },
      (e: Error) => this.logger.warn(`spare transform thread did not start: ${e.message}`),
    );
  }

  /** A thread, started and ready (its engine loaded): as a thread of the pool, or as the spare. */
  private async newThread(): Promise<SandboxThread> {
    this.wasmModule ??= loadWasmModule();
    const thread = new SandboxThread(await this.wasmModule, this.config);
    thread.worker.on('error', (e: unknown) => this.logger.warn(`transform thread failed: ${messageOf(e)}`));
    thread.worker.once('exit', () => (thread.exitedEarly = true));
    try {
      await thread.ready;
    } catch (e) {
      void thread.worker.terminate();
      throw e;
    }
    return thread;
  }

  private answered(i: number, thread: SandboxThread, results: Array<{ id: number; ms: number } & SandboxAnswer>): void {
    const byId = new Map(thread.batch.map((p) => [p.id, p]));
    thread.batch = [];
    for (const r of results) {
      const p = byId.get(r.id);
      if (!p) continue;
      this.cost(p.key, r.ms);
      p.resolve(r.error ? { error: r.error } : { text: r.text ?? null });
    }
    if (this.threads[i] === thread) this.pump();
  }

  /** A thread ended: by the watchdog, or on its own (a crash). Its batch goes back in front, but the call it was on. */
  private exited(i: number, thread: SandboxThread): void {
    if (this.threads[i] === thread) this.threads[i] = undefined;
    if (this.stopped) return;
    const batch = thread.batch;
    thread.batch = [];
    if (!thread.cut && batch.length > 0) {
      // ended on its own: whichever call was running may be what ended it, so none of the batch runs again
      for (const p of batch) p.resolve({ error: { kind: 'engine', name: 'Error', message: 'the sandbox thread stopped', stack: '' } });
    } else {
      for (const p of batch.reverse()) this.requeueFront(p);
    }
    this.pump();
  }

  private requeueFront(p: Pending): void {
    const q = this.queues.get(p.key);
    if (q) q.unshift(p);
    else this.queues.set(p.key, [p]);
    this.queued++;
  }

  /**
   * Looks at the calls under way every few ms while any thread has a batch. QuickJS
   * checks the budget every few thousand operations, which a loop of heavy built-ins
   * reaches seldom; a call past twice its budget ends its thread (V8 stops the
   * WebAssembly at once) and is answered as a timeout, the rest of its batch goes back in
   * front, and a spare thread takes its place (cut); the compiled transforms go with the
   * old thread.
   */
  private watch(): void {
    if (this.watchdog) return;
    const every = Math.max(5, Math.min(50, Math.floor(this.config.transformTimeoutMs / 2)));
    this.watchdog = setInterval(() => this.inspect(), every);
    this.watchdog.unref();
  }

  private inspect(): void {
    const now = Date.now();
    let busy = false;
    for (let i = 0; i < this.threads.length; i++) {
      const thread = this.threads[i];
      if (!thread || thread.batch.length === 0) continue;
      busy = true;
      const call = thread.callUnderWay(now);
      if (!call || call.ms <= call.budgetMs * WATCHDOG_FACTOR + WATCHDOG_SLACK_MS) continue;
      this.cut(i, thread, call.id);
    }
    if (!busy) {
      clearInterval(this.watchdog);
      this.watchdog = undefined;
    }
  }

  /**
   * Ends a thread whose call overran: that call (`id`) is answered as timed out, and
   * the rest of the batch runs again on a new thread (the thread answers a batch whole,
   * so the ones it finished run twice: a transform is a function of its input).
   */
  private cut(i: number, thread: SandboxThread, id: number): void {
    thread.cut = true;
    this.threads[i] = undefined; // out of the pool now: terminating takes a few ms, and its batch comes back at its exit
    this.threadsEnded++;
    const stuck = thread.batch.find((p) => p.id === id);
    thread.batch = thread.batch.filter((p) => p !== stuck);
    if (stuck) this.cost(stuck.key, WATCHDOG_FACTOR * this.config.transformTimeoutMs);
    stuck?.resolve({ error: { kind: 'timeout', name: 'InternalError', message: 'interrupted', stack: '' } });
    this.logger.warn(`transform ${stuck?.key ?? '(compile)'} ran past ${WATCHDOG_FACTOR}× its budget: its thread is ended and another takes its place`);
    void thread.worker.terminate();
    if (!this.spare) this.makeSpare();
  }

  private failAll(message: string): void {
    for (const q of this.queues.values()) for (const p of q) p.resolve({ error: { kind: 'engine', name: 'Error', message, stack: '' } });
    this.queues.clear();
    this.queued = 0;
  }
}

/** What a thread's failure says: a thread may throw, or end with, a value that is not an Error. */
function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The engine's WebAssembly, compiled once per process and handed to each thread. */
async function loadWasmModule(): Promise<CompiledWasm> {
  const require = createRequire(import.meta.url);
  return WebAssembly.compile(await readFile(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')));
}
