// bench:peer's rounds of the two peer workers (pg-boss 12, graphile-worker 0.17, each
// with axios): the jobs inserted 1,000 a statement from the bench process on a durable
// connection (as the service's API stores a batch: synchronous_commit on), the worker a
// child process on connections with synchronous_commit off (as the service's worker),
// warm before it says "ready" (its own warm-up, in its own process).
import { spawn } from 'node:child_process';
import { makeWorkerUtils } from 'graphile-worker';
import { PgBoss } from 'pg-boss';
import { drain, wholeJob } from '../lib/drain.mjs';

const QUEUE = 'callbacks';
const bodyOf = (i) => ({ event: 'bench', n: i });
const payloads = (url, n) => Array.from({ length: n }, (_, i) => ({ url, body: bodyOf(i) }));

/** `url` with synchronous_commit off on every connection opened with it. */
export function asyncCommitUrl(url) {
  const u = new URL(url);
  u.searchParams.set('options', '-c synchronous_commit=off');
  return u.toString();
}

/** Starts a child `node` on `script` with `env`; resolves once it prints "ready" (after its warm-up). */
function startPeer(script, env) {
  const child = spawn(process.execPath, [new URL(script, import.meta.url).pathname], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr.on('data', (c) => process.stderr.write(`[peer] ${c}`));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`peer did not start within 60 s:\n${output}`));
    }, 60_000);
    child.stdout.on('data', (c) => {
      output += c;
      if (output.includes('ready')) {
        clearTimeout(timer);
        resolve({
          pid: child.pid,
          stop: () => new Promise((r) => (child.exitCode !== null ? r() : (child.once('exit', r), child.kill('SIGTERM')))),
        });
      }
    });
    child.once('exit', (code) => reject(new Error(`peer exited with ${code}:\n${output}`)));
  });
}

/** pg-boss 12 + axios, `concurrency` batches of 200 at once (8 or 1). */
export const pgBossPeer = (concurrency) => ({
  name: `pg-boss 12 + axios, ${concurrency === 1 ? 'one batch of 200 at a time' : `${concurrency} batches of 200 at once`}`,
  script: './pgboss-axios.worker.mjs',
  env: { PEER_QUEUE: QUEUE, PEER_BATCH: '200', PEER_CONCURRENCY: String(concurrency) },
  async open(databaseUrl, db) {
    const boss = new PgBoss({ connectionString: databaseUrl, max: 2, supervise: false, schedule: false });
    await boss.start();
    await boss.createQueue(QUEUE).catch(() => undefined); // exists from an earlier round
    await db.query('CREATE TABLE IF NOT EXISTS delivery (job_id uuid PRIMARY KEY, status int, duration_ms real, attempted_at timestamptz)');
    await db.query('TRUNCATE delivery');
    await boss.deleteAllJobs();
    return {
      insert: async (jobs) => {
        for (let from = 0; from < jobs.length; from += 1_000)
          await boss.insert(
            QUEUE,
            jobs.slice(from, from + 1_000).map((data) => ({ data })),
          );
      },
      close: () => boss.stop({ graceful: false }),
    };
  },
  openJobs: `SELECT count(*)::int AS n FROM pgboss.job WHERE name = '${QUEUE}' AND state <> 'completed'`,
});

/** graphile-worker 0.17 + axios as its performance page advises (bench/peer/graphile-axios.worker.mjs). */
export const graphilePeer = {
  name: 'graphile-worker 0.17 + axios, local queue of 500, 200 jobs at once, batched completion and results',
  script: './graphile-axios.worker.mjs',
  env: { PEER_TASK: 'send' },
  async open(databaseUrl, db) {
    const utils = await makeWorkerUtils({ connectionString: databaseUrl });
    await utils.migrate();
    await db.query('CREATE TABLE IF NOT EXISTS delivery (job_id bigint PRIMARY KEY, status int, duration_ms real, attempted_at timestamptz)');
    await db.query('TRUNCATE delivery');
    await db.query('DELETE FROM graphile_worker._private_jobs');
    return {
      insert: async (jobs) => {
        for (let from = 0; from < jobs.length; from += 1_000)
          await utils.addJobs(jobs.slice(from, from + 1_000).map((payload) => ({ identifier: 'send', payload })));
      },
      close: () => utils.release(),
    };
  },
  openJobs: 'SELECT count(*)::int AS n FROM graphile_worker._private_jobs',
};

/** True once `n` results were stored as 200 and no job of the peer's queue is left. */
const finished = (peer, db, n) => async () => {
  const { rows } = await db.query(`SELECT (SELECT count(*)::int FROM delivery WHERE status = 200) AS ok, (${peer.openJobs}) AS open`);
  return rows[0].ok === n && rows[0].open === 0;
};

/**
 * A peer round: `wholeJob` false, the `n` jobs are stored first and the worker started
 * after (timed from the receiver's first request: the drain only); true, the worker is
 * started (and warm) first and the job timed from the first insert to the last stored result.
 */
export async function peerRound(peer, databaseUrl, db, backendPid, receiver, n, { wholeJob: whole = false } = {}) {
  const queue = await peer.open(databaseUrl, db);
  const jobs = payloads(`${receiver.url()}/hook`, n);
  let worker;
  try {
    if (!whole) await queue.insert(jobs);
    await db.query('VACUUM ANALYZE');
    worker = await startPeer(peer.script, { ...peer.env, DATABASE_URL: asyncCommitUrl(databaseUrl) });
    return whole
      ? await wholeJob(receiver, n, worker.pid, backendPid, () => queue.insert(jobs), finished(peer, db, n))
      : await drain(receiver, n, worker.pid, backendPid, finished(peer, db, n));
  } finally {
    await worker?.stop();
    await queue.close();
  }
}
