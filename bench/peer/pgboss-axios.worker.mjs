// The worker a backend team writes instead of running the service: pg-boss 12 for the
// queue, axios for the calls, the results in a table of its own. `work()` with batches
// of 200 jobs and 8 batches at once (localConcurrency), each batch's calls sent at
// once with keep-alive, one `unnest` insert of the results per batch; a call that
// fails is failed back to pg-boss (its retries), the rest completed by pg-boss when
// the handler returns. Nothing here is tuned beyond what its docs show.
//   DATABASE_URL=… PEER_QUEUE=callbacks node bench/peer/pgboss-axios.worker.mjs
// (PEER_BATCH, PEER_CONCURRENCY change the batch size and batches at once.)
// Prints "ready" once it works the queue; stops on SIGTERM.
import http from 'node:http';
import axios from 'axios';
import pg from 'pg';
import { PgBoss } from 'pg-boss';

const queue = process.env.PEER_QUEUE ?? 'callbacks';
const batchSize = Number(process.env.PEER_BATCH ?? 200);
const localConcurrency = Number(process.env.PEER_CONCURRENCY ?? 8);

const boss = new PgBoss({ connectionString: process.env.DATABASE_URL });
boss.on('error', (e) => console.error(`[peer] ${e.message}`));
await boss.start();
const results = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: localConcurrency });
const client = axios.create({
  httpAgent: new http.Agent({ keepAlive: true }),
  timeout: 10_000,
  validateStatus: () => true,
  headers: { 'content-type': 'application/json' },
});

async function send(job) {
  const attemptedAt = new Date();
  const t0 = performance.now();
  let status = 0;
  try {
    status = (await client.post(job.data.url, job.data.body)).status;
  } catch {
    status = 0; // timeout or connection error
  }
  return { id: job.id, status, ms: performance.now() - t0, attemptedAt };
}

await boss.work(queue, { batchSize, localConcurrency, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 }, async (jobs) => {
  const done = await Promise.all(jobs.map(send));
  await results.query(
    `INSERT INTO delivery (job_id, status, duration_ms, attempted_at)
     SELECT * FROM unnest($1::uuid[], $2::int[], $3::real[], $4::timestamptz[])`,
    [done.map((d) => d.id), done.map((d) => d.status), done.map((d) => d.ms), done.map((d) => d.attemptedAt)],
  );
  const failed = done.filter((d) => d.status < 200 || d.status >= 300).map((d) => d.id);
  if (failed.length > 0) await boss.fail(queue, failed);
});
console.log('ready');

process.once('SIGTERM', async () => {
  await boss.stop({ graceful: true, timeout: 10_000 });
  await results.end();
  process.exit(0);
});
