import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { CaughtErrors } from '../logging/caught-errors.js';
import { AppConfig } from '../config/app.config.js';
import { isDatabaseUnavailable } from '../database/database.errors.js';
import { DueNotifier } from '../database/due.notifier.js';
import { TaskKinds } from './task-kinds.js';
import { TaskRepository, type ChunkResult } from './task.repository.js';
import { CHUNK_SIZES, type ChunkSize } from './task.sql.js';

/**
 * In the background, the runner rests after each chunk for as long as the chunk took
 * times this: a task uses at most a fifth of one connection's time, and the database
 * keeps the rest for the traffic that goes on meanwhile.
 */
const REST_FACTOR = 4;
/** After a failed chunk, the runner waits this long and tries again (a database cut off, a lock timeout). */
const RETRY_MS = 1000;
/** Failed chunks in a row after which the runner leaves the task to the leader's resume. */
const MAX_FAILURES = 5;

/**
 * How long one chunk should run: its row locks last that long. Well under the
 * 200 ms a request or a claim could wait on them, with room for a loaded machine's
 * stalls, and long enough that a chunk's fixed cost (its plan, the task's row)
 * stays a small part of it.
 */
export const CHUNK_TARGET_MS = 40;

/**
 * Picks each chunk's size (CHUNK_SIZES) from how long the last one took, so a chunk
 * runs for about CHUNK_TARGET_MS whatever the server, its load and the rows: the
 * largest size the last chunk's time per row fits in the target, one size up at
 * most per chunk (a fast chunk on few rows says little of a large one), down as far
 * as needed at once. 500 rows took 10–45 ms on an idle embedded 18 here and up to
 * 190 ms on the same machine with both cores busy elsewhere; a fixed size held its
 * locks past 200 ms on a slower machine.
 */
export class ChunkSizer {
  private index: number = CHUNK_SIZES.indexOf(200);

  get size(): ChunkSize {
    return CHUNK_SIZES[this.index];
  }

  /** Takes the time of a chunk of the current size. */
  took(ms: number): void {
    const perRow = Math.max(ms, 0.1) / this.size;
    let fits = 0;
    while (fits + 1 < CHUNK_SIZES.length && CHUNK_SIZES[fits + 1] * perRow <= CHUNK_TARGET_MS) fits++;
    this.index = Math.min(fits, this.index + 1);
  }
}

/**
 * Runs tasks (task.sql.ts) chunk after chunk: the request that made one runs its
 * first chunks itself, for up to TASK_INLINE_MS, so a small change is done before it
 * answers, and the rest runs on in the background of the same process. A task whose
 * process died mid-way is resumed by the maintenance leader (resumeIdle). Two
 * runners of one task never run a chunk at once (the task's row is locked by each);
 * one that finds it held by another leaves it to that one.
 */
@Injectable()
export class TaskRunner implements OnModuleDestroy {
  private readonly logger = new Logger(TaskRunner.name);
  private readonly running = new Map<string, Promise<void>>();
  private stopping = false;

  constructor(
    private readonly tasks: TaskRepository,
    private readonly kinds: TaskKinds,
    private readonly due: DueNotifier,
    private readonly caught: CaughtErrors,
    private readonly config: AppConfig,
  ) {}

  /**
   * Runs the task's chunks for up to `inlineMs`, then, if it is not done, goes on in
   * the background. Returns whether it finished within that time and how many
   * callbacks it changed meanwhile.
   */
  async start(id: string, inlineMs = this.config.taskInlineMs): Promise<{ finished: boolean; done: number }> {
    const until = Date.now() + inlineMs;
    const sizer = new ChunkSizer();
    let done = 0;
    for (;;) {
      const r = await this.tasks.runChunk(id, sizer.size);
      sizer.took(r.ms);
      done += r.changed;
      this.afterChunk(r);
      if (!r.ran || r.finished) return { finished: r.finished, done };
      if (Date.now() >= until) break;
    }
    this.background(id, sizer);
    return { finished: false, done };
  }

  /** Resumes up to `limit` tasks whose runner stopped; the maintenance leader's task. Returns how many it took up. */
  async resumeIdle(limit = 10): Promise<number> {
    const ids = (await this.tasks.idleTasks(this.config.taskResumeAfterMs, limit)).filter((id) => !this.running.has(id));
    for (const id of ids) this.background(id);
    if (ids.length > 0) this.logger.warn(`resuming ${ids.length} task(s) whose runner stopped: ${ids.join(', ')}`);
    return ids.length;
  }

  /** Lets each task under way finish its current chunk; the rest is resumed by the leader (wherever it runs next). */
  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.running.values());
  }

  private background(id: string, sizer = new ChunkSizer()): void {
    if (this.running.has(id) || this.stopping) return;
    const run = this.runToEnd(id, sizer).finally(() => this.running.delete(id));
    this.running.set(id, run);
  }

  private async runToEnd(id: string, sizer: ChunkSizer): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      try {
        const started = performance.now();
        const r = await this.tasks.runChunk(id, sizer.size);
        sizer.took(r.ms);
        failures = 0;
        this.afterChunk(r);
        if (!r.ran || r.finished) return;
        await sleep((performance.now() - started) * REST_FACTOR);
      } catch (error) {
        // counted and logged; the chunk rolled back, so trying it again is safe
        this.caught.record('task_chunk', error, `task ${id} tries again in ${RETRY_MS} ms`);
        if (++failures >= MAX_FAILURES && !isDatabaseUnavailable(error)) return; // the leader resumes it once idle
        await sleep(RETRY_MS);
      }
    }
  }

  /** Callbacks released, retried or recovered are due now: the workers are woken. */
  private afterChunk(r: ChunkResult): void {
    if (r.changed > 0 && r.kind && this.kinds.of(r.kind).makesDue) this.due.notifyDue();
  }
}
