// The whole job as a user runs it, against what they would build instead. 20,000
// callbacks are ingested through the API (ROLE=api), then one worker is started
// (ROLE=worker, the per-host cap lifted above the window) and drains them into one
// receiver that answers at once. Beside it, same run, same receiver, taking turns:
//   - a pg-boss 12 + axios worker (bench/peer/pgboss-axios.worker.mjs: batches of
//     200, 8 at once): the same 20,000 jobs inserted into pg-boss first, 1,000 at a
//     time, then the worker started;
//   - a bare undici rolling window of the same size (no database): the sending floor.
// Each drain is timed from the receiver's first request to the last result stored,
// and the CPU of the worker process, of Postgres (all its processes) and of the whole
// machine is read over that same span, per delivered callback.
//   node bench/peer.bench.mjs     (BENCH_N, BENCH_WINDOW, BENCH_ROUNDS)
import { spawn } from 'node:child_process';
import { machineBusyMs, postgresCpuMs, processCpuMs } from './lib/cpu.mjs';
import { BENCH_KEY, connect, freshDatabase, main, median, row, startService, waitUntil } from './lib/harness.mjs';
import { BenchReceiver } from './lib/receiver.mjs';
import { undiciWindow } from './lib/undici-window.mjs';

const N = Number(process.env.BENCH_N ?? 20_000);
const WINDOW = Number(process.env.BENCH_WINDOW ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PER_BATCH = 10_000;
const QUEUE = 'callbacks';

const bodyOf = (i) => ({ event: 'bench', n: i });

/** Reads the meters now: ms of CPU of `pid` (or of all of an array of pids), of Postgres, of the machine. */
function meters(pid, backendPid) {
  const worker = [pid].flat().reduce((total, p) => total + processCpuMs(p), 0);
  return { worker, postgres: postgresCpuMs(backendPid), machine: machineBusyMs(), at: performance.now() };
}

/**
 * Waits for the first request of this drain, reads the meters, waits until `n` were
 * answered and `finished()` is true, reads them again. Returns calls/s and µs per call;
 * `pid` is the worker's, or an array of the workers' (their CPU is summed).
 */
export async function drain(receiver, n, pid, backendPid, finished) {
  const before = (await receiver.stats()).count;
  await receiver.waitForCount(before + 1, 60_000);
  const start = meters(pid, backendPid);
  await receiver.waitForCount(before + n, 120_000);
  await waitUntil(finished, 120_000, 10);
  const end = meters(pid, backendPid);
  const perCall = (k) => ((end[k] - start[k]) * 1000) / n;
  return { perSecond: n / ((end.at - start.at) / 1000), worker: perCall('worker'), postgres: perCall('postgres'), machine: perCall('machine') };
}

/** Starts a child `node` on `script` with `env`; resolves once it prints "ready". */
function startPeer(script, env) {
  const child = spawn(process.execPath, [script], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stderr.on('data', (c) => process.stderr.write(`[peer] ${c}`));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`peer did not start within 30 s:\n${output}`)), 30_000);
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

/** One pg-boss + axios round: insert `n` jobs, start the worker, time the drain. */
async function peerRound(databaseUrl, db, backendPid, receiver, n, concurrency = 8) {
  const { PgBoss } = await import('pg-boss');
  const boss = new PgBoss({ connectionString: databaseUrl, max: 2, supervise: false, schedule: false });
  await boss.start();
  await boss.createQueue(QUEUE).catch(() => undefined); // exists from an earlier round
  await db.query('CREATE TABLE IF NOT EXISTS delivery (job_id uuid PRIMARY KEY, status int, duration_ms real, attempted_at timestamptz)');
  await db.query('TRUNCATE delivery');
  await boss.deleteAllJobs(QUEUE);
  const url = `${receiver.url()}/hook`;
  for (let from = 0; from < n; from += 1_000) {
    await boss.insert(
      QUEUE,
      Array.from({ length: Math.min(1_000, n - from) }, (_, k) => ({ data: { url, body: bodyOf(from + k) } })),
    );
  }
  await boss.stop({ graceful: false });
  await db.query('VACUUM ANALYZE');
  const peer = await startPeer(new URL('./peer/pgboss-axios.worker.mjs', import.meta.url).pathname, {
    DATABASE_URL: databaseUrl,
    PEER_QUEUE: QUEUE,
    PEER_BATCH: '200',
    PEER_CONCURRENCY: String(concurrency),
  });
  try {
    const finished = async () => {
      const { rows } = await db.query(
        `SELECT (SELECT count(*)::int FROM delivery WHERE status = 200) AS ok,
                (SELECT count(*)::int FROM pgboss.job WHERE name = $1 AND state <> 'completed') AS open`,
        [QUEUE],
      );
      return rows[0].ok === n && rows[0].open === 0;
    };
    return await drain(receiver, n, peer.pid, backendPid, finished);
  } finally {
    await peer.stop();
  }
}

/**
 * Posts `n` callbacks to `url` through the API at `api.url`, PER_BATCH a batch,
 * `fields` on each (e.g. a runAt); returns their ids in order.
 */
export async function ingestThroughApi(api, url, n, fields = {}) {
  const ids = [];
  for (let from = 0; from < n; from += PER_BATCH) {
    const callbacks = Array.from({ length: Math.min(PER_BATCH, n - from) }, (_, k) => ({ url, body: bodyOf(from + k), ...fields }));
    const res = await fetch(`${api.url}/v1/batches`, {
      method: 'POST',
      headers: { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ label: 'peer', callbacks }),
    });
    // Read to the end: an unread answer keeps its connection busy (and the client's pool
    // then opens more), which held the API's stop for its whole shutdown limit.
    const answer = await res.text();
    if (res.status !== 202) throw new Error(`ingest answered ${res.status}: ${answer}`);
    ids.push(...JSON.parse(answer).callbacks.map((c) => c.id));
  }
  return ids;
}

/** True once no callback of the database is pending or in flight. */
export const queueEmpty = (db) => async () => {
  const { rows } = await db.query(`SELECT count(*)::int AS n FROM callback WHERE status IN ('pending', 'in_flight')`);
  return rows[0].n === 0;
};

/** Throws unless every callback of the database succeeded on its one attempt. */
export async function checkAllSucceededOnce(db) {
  const { rows } = await db.query(`SELECT count(*)::int AS n FROM callback WHERE status <> 'succeeded' OR attempts <> 1`);
  if (rows[0].n !== 0) throw new Error(`${rows[0].n} callbacks did not succeed on their one attempt`);
}

/**
 * One service round: ingest `n` callbacks through the API, start a worker, time the
 * drain. `inspect(worker)`, when given, runs after the drain, before the worker stops;
 * `env` goes to the worker on top (e.g. DATABASE_DIRECT_URL beside a pooled URL).
 */
export async function serviceRound(databaseUrl, api, db, backendPid, receiver, n, { inspect, env = {} } = {}) {
  await ingestThroughApi(api, `${receiver.url()}/hook`, n);
  await db.query('VACUUM ANALYZE');
  const worker = await startService(databaseUrl, { ...env, ROLE: 'worker', DISPATCH_CONCURRENCY: String(WINDOW), HOST_MAX_IN_FLIGHT: String(WINDOW * 5) });
  try {
    const result = await drain(receiver, n, worker.pid, backendPid, queueEmpty(db));
    await checkAllSucceededOnce(db);
    if (inspect) Object.assign(result, await inspect(worker));
    return result;
  } finally {
    await worker.stop();
  }
}

export async function peerScenario(server, { n = N, window = WINDOW, rounds = ROUNDS } = {}) {
  const serviceDb = await freshDatabase(server, 'bench_peer_service');
  const peerDb = await freshDatabase(server, 'bench_peer_pgboss');
  const receiver = await BenchReceiver.start();
  const api = await startService(serviceDb, { ROLE: 'api' });
  const sdb = await connect(serviceDb);
  const pdb = await connect(peerDb);
  const pid = async (db) => (await db.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  try {
    const target = [`${receiver.url()}/hook`];
    await undiciWindow({ urls: target, total: 2_000, window }); // warm the receiver
    const bare = [];
    const peer = [];
    const serial = [];
    const ours = [];
    // Warm-up turn of each (plans, JIT, pg-boss's schema), not counted.
    await peerRound(peerDb, pdb, await pid(pdb), receiver, 2_000);
    await serviceRound(serviceDb, api, sdb, await pid(sdb), receiver, 2_000);
    for (let round = 0; round < rounds; round++) {
      bare.push((await undiciWindow({ urls: target, total: n, window })).perSecond);
      peer.push(await peerRound(peerDb, pdb, await pid(pdb), receiver, n));
      serial.push(await peerRound(peerDb, pdb, await pid(pdb), receiver, n, 1));
      ours.push(await serviceRound(serviceDb, api, sdb, await pid(sdb), receiver, n));
    }
    const m = (runs, k) => median(runs.map((r) => r[k]));
    const size = `${n.toLocaleString('en-US')} callbacks, window ${window}, median of ${rounds}`;
    const cpu = (r) => r.worker + r.postgres;
    return [
      row(
        `whole job: ingested through the API, then one worker drains them (${size}; baseline: pg-boss 12 + axios worker)`,
        m(ours, 'perSecond'),
        'callbacks/s',
        {
          baseline: m(peer, 'perSecond'),
          target: 2.5 * m(peer, 'perSecond'),
        },
      ),
      row('  pg-boss 12 + axios worker, same receiver (baseline: bare undici window, no database)', m(peer, 'perSecond'), 'callbacks/s', {
        baseline: median(bare),
      }),
      // The same worker one batch at a time (localConcurrency 1): faster on 2 cores,
      // where 8 batches of 200 (1,600 calls in flight through axios) cost it more CPU.
      row('  service against the same worker one batch at a time (baseline: it, localConcurrency 1)', m(ours, 'perSecond'), 'callbacks/s', {
        baseline: m(serial, 'perSecond'),
      }),
      row('  service, as a share of the bare undici window', m(ours, 'perSecond') / median(bare), '×', { target: 0.6 }),
      row('  service + Postgres CPU per callback (baseline: pg-boss worker + Postgres)', median(ours.map(cpu)), 'µs', {
        baseline: median(peer.map(cpu)),
        target: 200,
        higherIsBetter: false,
      }),
      row('    of which the worker process (baseline: the pg-boss worker process)', m(ours, 'worker'), 'µs', {
        baseline: m(peer, 'worker'),
        higherIsBetter: false,
      }),
      row('    of which Postgres (baseline: Postgres under pg-boss)', m(ours, 'postgres'), 'µs', { baseline: m(peer, 'postgres'), higherIsBetter: false }),
      row('  busy CPU of the whole machine per callback, receiver included (baseline: the same for pg-boss)', m(ours, 'machine'), 'µs', {
        baseline: m(peer, 'machine'),
        higherIsBetter: false,
      }),
    ];
  } finally {
    await sdb.end();
    await pdb.end();
    await api.stop();
    await receiver.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(async (server) => peerScenario(server));
}
