// The second worker a backend team might write instead: graphile-worker 0.17 for the
// queue, axios for the calls (bench/peer/common.mjs, as the pg-boss peer), results in a
// table of their own, set up as graphile-worker's performance page advises for many
// short jobs (https://worker.graphile.org/docs/performance; options of 0.17.3's
// preset.worker, its index.d.ts):
//   - concurrentJobs 200: the service's window (DISPATCH_CONCURRENCY in bench:peer);
//   - localQueue { size: 500 }: the page's own setting; the pool fetches (and locks)
//     500 jobs in one statement and hands them out locally, instead of one
//     get_job per job (the release notes ask for at least concurrency + 1);
//   - completeJobBatchDelay 0 and failJobBatchDelay 0: completions (and failures)
//     made in the same tick go as one statement, as on that page;
//   - maxPoolSize 10 (node-postgres's default): with the local queue and batched
//     completion no job holds a connection, so the page's concurrency + 1 is not needed
//     at 200 (and would be 201 connections);
//   - a logger that keeps warnings and errors: the default logs a line per completed
//     job at info, which a production setup turns off;
//   - results written in batches: a job's outcome waits in a small batcher whose flush
//     is one `unnest` INSERT (100 rows, or what waits after PEER_RESULT_DELAY_MS, 2 ms);
//     each job awaits its row's flush, so it completes only once its result is stored;
//     a failed call throws, and graphile-worker retries the job.
// Given what the service has (bench/README.md, 2026-12-03): synchronous_commit = off on
// every connection (the bench passes `options=-c synchronous_commit=off` in
// DATABASE_URL), and a warm-up in this process before "ready": WARM_UP_CALLS (3,000)
// jobs of a task of their own, added 1,000 a statement, worked by a runner with this
// same handler and options against a loopback receiver in this process; then that
// runner is stopped, their results deleted, and a runner of the real task started.
//   DATABASE_URL=… node bench/peer/graphile-axios.worker.mjs   (PEER_TASK: 'send')
// Prints "ready" once it works the queue; stops on SIGTERM.
import { setTimeout as sleep } from 'node:timers/promises';
import { Logger, makeWorkerUtils, run } from 'graphile-worker';
import pg from 'pg';
import { loopbackReceiver, ok, send, storeOutcomes, warmUpPayloads, WARM_UP_CALLS } from './common.mjs';

const task = process.env.PEER_TASK ?? 'send';
const warmUpTask = `${task}-warm-up`;
const RESULT_BATCH = 100;
const RESULT_DELAY_MS = Number(process.env.PEER_RESULT_DELAY_MS ?? 2);

const connectionString = process.env.DATABASE_URL;
const results = new pg.Pool({ connectionString, max: 4 });
// Its warning that maxPoolSize is under concurrentJobs is left out: the pool is 10 on purpose (above).
const logger = new Logger(() => (level, message) => {
  if ((level === 'error' || level === 'warning') && !message.includes('maxPoolSize')) console.error(`[graphile-worker] ${message}`);
});
const preset = {
  worker: { connectionString, concurrentJobs: 200, maxPoolSize: 10, localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 },
};

/** Outcomes waiting for their INSERT; each add resolves once its row is stored. */
class ResultBatcher {
  #waiting = [];
  #timer = null;

  add(outcome) {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ outcome, resolve, reject });
      if (this.#waiting.length >= RESULT_BATCH) this.#flush();
      else this.#timer ??= setTimeout(() => this.#flush(), RESULT_DELAY_MS);
    });
  }

  #flush() {
    clearTimeout(this.#timer);
    this.#timer = null;
    const batch = this.#waiting;
    this.#waiting = [];
    storeOutcomes(
      results,
      batch.map((w) => w.outcome),
      'bigint',
    ).then(
      () => batch.forEach((w) => w.resolve()),
      (error) => batch.forEach((w) => w.reject(error)),
    );
  }
}
const batcher = new ResultBatcher();

/** The task handler of both tasks: one call, its outcome stored, a failure thrown for graphile-worker's retry. */
async function handler(payload, helpers) {
  const outcome = await send(helpers.job.id, payload);
  await batcher.add(outcome);
  if (!ok(outcome)) throw new Error(`answered ${outcome.status}`);
}

const runner = (identifier) => run({ preset, logger, noHandleSignals: true, taskList: { [identifier]: handler } });

async function warmUp() {
  const loopback = await loopbackReceiver();
  const utils = await makeWorkerUtils({ connectionString, logger });
  await utils.migrate();
  const payloads = warmUpPayloads(loopback.url);
  const ids = [];
  for (let from = 0; from < payloads.length; from += 1_000) {
    const jobs = await utils.addJobs(payloads.slice(from, from + 1_000).map((payload) => ({ identifier: warmUpTask, payload })));
    ids.push(...jobs.map((j) => j.id));
  }
  const warming = await runner(warmUpTask);
  const open = async () => {
    const { rows } = await results.query(
      `SELECT count(*)::int AS n FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id WHERE t.identifier = $1`,
      [warmUpTask],
    );
    return rows[0].n;
  };
  while ((await open()) > 0) await sleep(20);
  await warming.stop();
  await results.query('DELETE FROM delivery WHERE job_id = ANY($1::bigint[])', [ids]);
  await utils.release();
  await loopback.close();
}

if (WARM_UP_CALLS > 0) await warmUp();
const working = await runner(task);
console.log('ready');

process.once('SIGTERM', async () => {
  await working.stop();
  await results.end();
  process.exit(0);
});
