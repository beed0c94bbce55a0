// The worker a backend team writes instead of running the service: pg-boss 12 for the
// queue, axios for the calls, the results in a table of its own. `work()` with batches
// of 200 jobs and 8 batches at once (localConcurrency; 1 is its other shape), each
// batch's calls sent at once with keep-alive, one `unnest` insert of the results per
// batch; a call that fails is failed back to pg-boss (its retries), the rest completed
// by pg-boss when the handler returns.
//
// Given what the service has (bench/README.md, 2026-12-03):
//   - synchronous_commit = off on every connection: the bench passes DATABASE_URL with
//     `options=-c synchronous_commit=off`, as the service's worker runs its claims and
//     write-backs (DISPATCH_SYNCHRONOUS_COMMIT, default off);
//   - a warm-up in this process before "ready": WARM_UP_CALLS (3,000, the service's
//     figure) jobs of a queue of their own, inserted 1,000 a statement, worked by this
//     same handler with the same options against a loopback receiver in this process;
//     then that worker is stopped, their results deleted, and the real queue worked.
//   DATABASE_URL=… PEER_QUEUE=callbacks node bench/peer/pgboss-axios.worker.mjs
// (PEER_BATCH, PEER_CONCURRENCY change the batch size and batches at once.)
// Prints "ready" once it works the queue; stops on SIGTERM.
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { loopbackReceiver, ok, send, storeOutcomes, warmUpPayloads, WARM_UP_CALLS } from './common.mjs';

const queue = process.env.PEER_QUEUE ?? 'callbacks';
const warmUpQueue = `${queue}-warm-up`;
const batchSize = Number(process.env.PEER_BATCH ?? 200);
const localConcurrency = Number(process.env.PEER_CONCURRENCY ?? 8);
const options = { batchSize, localConcurrency, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 };

const boss = new PgBoss({ connectionString: process.env.DATABASE_URL });
boss.on('error', (e) => console.error(`[peer] ${e.message}`));
await boss.start();
const results = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: localConcurrency });

/** The handler of both queues: sends the batch's calls at once, stores their outcomes, fails the failed back. */
const handler = (name) => async (jobs) => {
  const done = await Promise.all(jobs.map((job) => send(job.id, job.data)));
  await storeOutcomes(results, done, 'uuid');
  const failed = done.filter((d) => !ok(d)).map((d) => d.id);
  if (failed.length > 0) await boss.fail(name, failed);
};

async function warmUp() {
  const loopback = await loopbackReceiver();
  await boss.createQueue(warmUpQueue).catch(() => undefined); // exists from an earlier start
  const payloads = warmUpPayloads(loopback.url);
  const ids = [];
  for (let from = 0; from < payloads.length; from += 1_000) {
    ids.push(
      ...((await boss.insert(
        warmUpQueue,
        payloads.slice(from, from + 1_000).map((data) => ({ data })),
        { returnId: true },
      )) ?? []),
    );
  }
  await boss.work(warmUpQueue, options, handler(warmUpQueue));
  const open = async () => {
    const { rows } = await results.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state <> 'completed'`, [warmUpQueue]);
    return rows[0].n;
  };
  while ((await open()) > 0) await sleep(20);
  await boss.offWork(warmUpQueue, { wait: true });
  await results.query('DELETE FROM delivery WHERE job_id = ANY($1::uuid[])', [ids]);
  await boss.deleteAllJobs(warmUpQueue);
  await loopback.close();
}

if (WARM_UP_CALLS > 0) await warmUp();
await boss.work(queue, options, handler(queue));
console.log('ready');

process.once('SIGTERM', async () => {
  await boss.stop({ graceful: true, timeout: 10_000 });
  await results.end();
  process.exit(0);
});
