// The whole job as a user runs it, against what they would build instead, each side
// given what the other has (bench/README.md, 2026-12-03). One receiver that answers at
// once; same run, taking turns each round:
//   - the service: an API process (ROLE=api) and one worker (ROLE=worker, window 200,
//     the per-host cap lifted above it; synchronous_commit off on its claims and
//     write-backs, DISPATCH_SYNCHRONOUS_COMMIT's default; no warm-up since
//     2026-12-03, the peers keep theirs);
//   - a pg-boss 12 + axios worker (bench/peer/pgboss-axios.worker.mjs) in both its
//     shapes, 8 batches of 200 at once and one batch at a time: each round's better one
//     is the one compared;
//   - a graphile-worker 0.17 + axios worker (bench/peer/graphile-axios.worker.mjs),
//     set up as its performance page advises (local queue of 500, batched completion,
//     200 jobs at once, results stored in batches);
//     both peers with synchronous_commit off on their connections and a warm-up of
//     3,000 calls in their own process before "ready", jobs inserted 1,000 a statement;
//   - a bare undici rolling window of the same size (no database): the sending floor.
// Two shapes of each: the whole job (worker started and warm, timed from the first POST
// of 10,000 callbacks or the first insert to the last stored result) and the drain only
// (rows stored first, the worker started after, timed from the receiver's first request
// to the last stored result). CPU of the worker process(es), of Postgres (all its
// processes) and of the whole machine is read over the drain, per delivered callback.
// The headline is the worse of the two fair ratios (service against the best peer).
// With BENCH_STATEMENTS=1 (a server loading pg_stat_statements), each side's Postgres
// time in the whole job is also printed statement by statement, per callback.
//   node bench/peer.bench.mjs     (BENCH_N, BENCH_WINDOW, BENCH_ROUNDS, BENCH_STATEMENTS)
import { drain, wholeJob } from './lib/drain.mjs';
import { connect, freshDatabase, main, median, row, startService, BENCH_KEY, backendPidOf } from './lib/harness.mjs';
import { BenchReceiver } from './lib/receiver.mjs';
import { printStatementTable, resetStatements, startCountingStatements, statementTimes } from './lib/statements.mjs';
import { machineBusyMs } from './lib/cpu.mjs';
import { undiciWindow } from './lib/undici-window.mjs';
import { graphilePeer, peerRound, pgBossPeer } from './peer/rounds.mjs';

export { drain };

const N = Number(process.env.BENCH_N ?? 20_000);
const WINDOW = Number(process.env.BENCH_WINDOW ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PER_BATCH = 10_000;
const STATEMENTS = process.env.BENCH_STATEMENTS === '1';

/** The body of plain callback `i` (exported: bench:fanout's drain gives its deliveries the same). */
export const bodyOf = (i) => ({ event: 'bench', n: i });

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
 * `wholeJob`: the worker is started (and warm) first, and the job is timed from the
 * first POST to the last stored result, the API's CPU counted with the worker's.
 * `ingest`: how the `n` callbacks are stored (default: POSTed as batches to the
 * receiver's /hook; bench:fanout publishes events instead).
 */
export async function serviceRound(databaseUrl, api, db, backendPid, receiver, n, { inspect, env = {}, wholeJob: whole = false, ingest } = {}) {
  const url = `${receiver.url()}/hook`;
  ingest ??= () => ingestThroughApi(api, url, n);
  if (!whole) await ingest();
  await db.query('VACUUM ANALYZE');
  const worker = await startService(databaseUrl, { ...env, ROLE: 'worker', DISPATCH_CONCURRENCY: String(WINDOW), HOST_MAX_IN_FLIGHT: String(WINDOW * 5) });
  try {
    const result = whole
      ? await wholeJob(receiver, n, [api.pid, worker.pid], backendPid, ingest, queueEmpty(db))
      : await drain(receiver, n, worker.pid, backendPid, queueEmpty(db));
    await checkAllSucceededOnce(db);
    if (inspect) Object.assign(result, await inspect(worker));
    return result;
  } finally {
    await worker.stop();
  }
}

const PG_BOSS_8 = pgBossPeer(8);
const PG_BOSS_1 = pgBossPeer(1);

/** Each side's rounds of one shape (drain only, or the whole job); per round, pg-boss's better shape is `pgBoss`, the better peer `best`. */
async function shapeRound(dbs, receiver, api, n, wholeJob) {
  const { service, pgBoss, graphile } = dbs;
  // BENCH_STATEMENTS: each side's statements in the whole job, counted from a reset just before its round
  const counted = async (db, round) => {
    if (!STATEMENTS || !wholeJob) return round();
    await resetStatements(db);
    const result = await round();
    return { ...result, statements: await statementTimes(db, n) };
  };
  const r = {};
  r.pgBoss8 = await counted(pgBoss.db, () => peerRound(PG_BOSS_8, pgBoss.url, pgBoss.db, pgBoss.pid, receiver, n, { wholeJob }));
  r.pgBoss1 = await counted(pgBoss.db, () => peerRound(PG_BOSS_1, pgBoss.url, pgBoss.db, pgBoss.pid, receiver, n, { wholeJob }));
  r.graphile = await counted(graphile.db, () => peerRound(graphilePeer, graphile.url, graphile.db, graphile.pid, receiver, n, { wholeJob }));
  r.service = await counted(service.db, () => serviceRound(service.url, api, service.db, service.pid, receiver, n, { wholeJob }));
  r.pgBoss = r.pgBoss8.perSecond >= r.pgBoss1.perSecond ? r.pgBoss8 : r.pgBoss1;
  r.best = r.pgBoss.perSecond >= r.graphile.perSecond ? r.pgBoss : r.graphile;
  return r;
}

/** The rows of one shape over the rounds `runs` (shapeRound's), medians; `what` names the shape. */
function shapeRows(runs, what, size) {
  const m = (k, f = 'perSecond') => median(runs.map((r) => r[k][f]));
  const service = m('service');
  return [
    row(`${what} (${size}): service (baseline: the better fair peer of each round)`, service, 'callbacks/s', { baseline: m('best'), target: 2.5 * m('best') }),
    row(`  against pg-boss 12 + axios, its better shape of each round (baseline: it)`, service, 'callbacks/s', { baseline: m('pgBoss') }),
    row(`    pg-boss 12 + axios, 8 batches of 200 at once (its rate; baseline: the one-batch shape)`, m('pgBoss8'), 'callbacks/s', { baseline: m('pgBoss1') }),
    row(`  against graphile-worker 0.17 + axios, local queue 500, batched (baseline: it)`, service, 'callbacks/s', { baseline: m('graphile') }),
  ];
}

/** Each side's Postgres time by statement in one round of the whole job (BENCH_STATEMENTS=1), as Markdown tables. */
function printStatements(round) {
  const sides = { service: round.service, 'pg-boss 12 (better shape)': round.pgBoss, 'graphile-worker 0.17': round.graphile };
  for (const [name, r] of Object.entries(sides)) printStatementTable(`whole job, ${name}: ${r.perSecond.toFixed(0)} callbacks/s`, r.statements);
}

export async function peerScenario(server, { n = N, window = WINDOW, rounds = ROUNDS } = {}) {
  const open = async (name) => {
    const url = await freshDatabase(server, name);
    const db = await connect(url);
    return { url, db, pid: await backendPidOf(db) };
  };
  const dbs = { service: await open('bench_peer_service'), pgBoss: await open('bench_peer_pgboss'), graphile: await open('bench_peer_graphile') };
  const closeDbs = () => Promise.all(Object.values(dbs).map((d) => d.db.end()));
  try {
    if (STATEMENTS) for (const { db } of Object.values(dbs)) await startCountingStatements(db);
  } catch (e) {
    await closeDbs(); // before the harness stops the server, which would cut them: an unhandled error
    throw e;
  }
  const receiver = await BenchReceiver.start();
  const api = await startService(dbs.service.url, { ROLE: 'api' });
  try {
    const target = [`${receiver.url()}/hook`];
    await undiciWindow({ urls: target, total: 2_000, window }); // warm the receiver
    // A first drain of each, not counted: the server's side (schemas, the tables' files
    // in its cache); each process warms itself (the service and the peers alike).
    await shapeRound(dbs, receiver, api, 2_000, false);
    const bare = [];
    const drains = [];
    const whole = [];
    for (let round = 0; round < rounds; round++) {
      const busy = machineBusyMs();
      bare.push({ ...(await undiciWindow({ urls: target, total: n, window })), machine: ((machineBusyMs() - busy) * 1000) / n });
      whole.push(await shapeRound(dbs, receiver, api, n, true));
      drains.push(await shapeRound(dbs, receiver, api, n, false));
    }
    if (STATEMENTS) printStatements(whole.at(-1));
    const size = `${n.toLocaleString('en-US')} callbacks, window ${window}, median of ${rounds}`;
    const m = (runs, k, f = 'perSecond') => median(runs.map((r) => r[k][f]));
    const ratio = (runs) => m(runs, 'service') / m(runs, 'best');
    const worst = ratio(whole) <= ratio(drains) ? { runs: whole, what: 'the whole job' } : { runs: drains, what: 'the drain only' };
    const cpu = (k) => median(drains.map((r) => r[k].worker + r[k].postgres));
    return [
      row(
        `peer comparison, the worse of the fair ratios (here ${worst.what}): service against the better of pg-boss 12 and graphile-worker 0.17, each with axios, synchronous_commit off and warm (${size})`,
        m(worst.runs, 'service'),
        'callbacks/s',
        { baseline: m(worst.runs, 'best'), target: 2.5 * m(worst.runs, 'best') },
      ),
      ...shapeRows(
        whole,
        'whole job: first POST (10,000 a batch; peers: first insert, 1,000 a statement) to the last stored result, worker running and warm',
        size,
      ),
      ...shapeRows(drains, 'drain only: rows stored first, worker started after, first request to the last stored result', size),
      row('  drain only: graphile-worker 0.17 + axios (its rate; baseline: bare undici window, no database)', m(drains, 'graphile'), 'callbacks/s', {
        baseline: median(bare.map((b) => b.perSecond)),
      }),
      row('  drain only: service, as a share of the bare undici window', m(drains, 'service') / median(bare.map((b) => b.perSecond)), '×', { target: 0.6 }),
      row('  drain only: service + Postgres CPU per callback (baseline: the better fair peer of each round + Postgres)', cpu('service'), 'µs', {
        baseline: cpu('best'),
        target: 200,
        higherIsBetter: false,
      }),
      row('    of which the worker process (baseline: the peer worker process)', m(drains, 'service', 'worker'), 'µs', {
        baseline: m(drains, 'best', 'worker'),
        higherIsBetter: false,
      }),
      row('    of which Postgres (baseline: Postgres under the peer)', m(drains, 'service', 'postgres'), 'µs', {
        baseline: m(drains, 'best', 'postgres'),
        higherIsBetter: false,
      }),
      row(
        "  whole job: CPU per callback of the API and worker processes (baseline: the better fair peer's worker process)",
        m(whole, 'service', 'worker'),
        'µs',
        {
          baseline: m(whole, 'best', 'worker'),
          higherIsBetter: false,
        },
      ),
      row('  whole job: Postgres CPU per callback (baseline: Postgres under the better fair peer)', m(whole, 'service', 'postgres'), 'µs', {
        baseline: m(whole, 'best', 'postgres'),
        higherIsBetter: false,
      }),
      row(
        '  bare undici window: busy CPU of the whole machine per call, receiver included (the HTTP exchange alone)',
        median(bare.map((b) => b.machine)),
        'µs',
      ),
      row(
        '  drain only: busy CPU of the whole machine per callback, receiver included (baseline: the same for the peer)',
        m(drains, 'service', 'machine'),
        'µs',
        {
          baseline: m(drains, 'best', 'machine'),
          higherIsBetter: false,
        },
      ),
    ];
  } finally {
    await closeDbs();
    await api.stop();
    await receiver.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(async (server) => peerScenario(server));
}
