// Workers side by side at one host's cap: three worker processes, default settings
// (window 200, HOST_MAX_IN_FLIGHT 20), drain 20,000 callbacks due at once to one host
// that answers at once, against one worker doing the same, same server, same run,
// taking turns (one first in even rounds, three first in odd ones). Every webhook-id
// must arrive exactly once, and the three must move at least 0.9x one worker's rate.
// Also each side's Postgres and worker CPU per callback, and its claim statements.
// On DATABASE_URL's server, or the embedded one; bench:servers runs it on two.
//   node bench/workers.bench.mjs     (BENCH_N, BENCH_ROUNDS)
import { backendPidOf, benchPostgres, connect, freshDatabase, main, median, row, startService, waitUntil } from './lib/harness.mjs';
import { BenchReceiver } from './lib/receiver.mjs';
import { drain, ingestThroughApi, queueEmpty } from './peer.bench.mjs';

const N = Number(process.env.BENCH_N ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
export const WORKERS = 3;
/** The rows come due this long after their ingest starts: time for the ingest and VACUUM (5 s and more on a busy machine), the workers already idle. */
const DUE_IN_MS = 15_000;

/**
 * The claim and write-back statements of `workers` (one, or an array), from their own
 * /metrics: how many, how many rows, and their mean ms.
 */
export async function statementTimes(workers) {
  const texts = await Promise.all([workers].flat().map(async (w) => (await fetch(`${w.url}/metrics`)).text()));
  const value = (name) => texts.reduce((total, text) => total + Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN), 0);
  const mean = (h) => (value(`${h}_sum`) * 1000) / value(`${h}_count`);
  return {
    claimMs: mean('dispatch_claim_duration_seconds'),
    claims: value('dispatch_claim_duration_seconds_count'),
    claimedRows: value('dispatch_claimed_rows_total'),
    writeBackMs: mean('dispatch_writeback_duration_seconds'),
    writeBacks: value('dispatch_writeback_duration_seconds_count'),
  };
}

/**
 * Waits (up to 10 s) until nothing but `db` itself is connected to its database, or
 * throws: a service left over from an earlier run would claim beside ours.
 */
export async function checkAlone(db) {
  const others = async () =>
    (
      await db.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
      )
    ).rows[0].n;
  await waitUntil(async () => (await others()) === 0, 10_000, 100).catch(async () => {
    throw new Error(`${await others()} other connections to the database before the round (a service left running?)`);
  });
}

/**
 * Starts `count` workers one after the other (each warms up at start; at once, on two
 * busy cores, they took over the 30 s start limit). Stops those up if one fails.
 */
async function startWorkers(databaseUrl, count) {
  const up = [];
  try {
    for (let i = 0; i < count; i++) up.push(await startService(databaseUrl, { ROLE: 'worker' }));
    return up;
  } catch (error) {
    await Promise.all(up.map((w) => w.stop()));
    throw error;
  }
}

/**
 * One turn: `count` workers (default settings: window 200, HOST_MAX_IN_FLIGHT
 * 20), idle, then `n` callbacks to the receiver's one host ingested through the API
 * with a runAt DUE_IN_MS ahead, so they come due at once for every worker. Timed as
 * bench:peer times a drain; the receiver's records tell how often each id arrived.
 */
export async function workersRound(side, receiver, count, n) {
  await checkAlone(side.db);
  const api = await startService(side.url, { ROLE: 'api' });
  let workers = [];
  try {
    workers = await startWorkers(side.url, count);
    await receiver.reset();
    const dueAt = Date.now() + DUE_IN_MS;
    const ids = await ingestThroughApi(api, `${receiver.url()}/hook`, n, { runAt: new Date(dueAt).toISOString() });
    await side.db.query('VACUUM ANALYZE');
    if (Date.now() > dueAt - 500) throw new Error(`the ingest and VACUUM took longer than ${DUE_IN_MS - 500} ms: raise DUE_IN_MS`);
    const result = await drain(
      receiver,
      n,
      workers.map((w) => w.pid),
      side.backendPid,
      queueEmpty(side.db),
    );
    const seen = new Map(ids.map((id) => [id, 0]));
    let strangers = 0;
    for (const id of (await receiver.records()).ids) {
      if (seen.has(id)) seen.set(id, seen.get(id) + 1);
      else strangers++;
    }
    const statements = await statementTimes(workers);
    const counts = [...seen.values()];
    const { rows } = await side.db.query(`SELECT count(*)::int AS n FROM callback WHERE id = ANY($1::uuid[]) AND (status <> 'succeeded' OR attempts <> 1)`, [
      ids,
    ]);
    return {
      ...result,
      ...statements,
      once: counts.filter((c) => c === 1).length,
      twice: counts.filter((c) => c > 1).length + strangers,
      missing: counts.filter((c) => c === 0).length,
      notOnce: rows[0].n,
    };
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await api.stop();
  }
}

/** Figures over turns: medians, and the exactly-once counts summed. */
export function workerRows(name, r, { n = N, rounds = r.three.length } = {}) {
  const m = (list, k) => median(list.map((x) => x[k]));
  const sum = (list, k) => list.reduce((t, x) => t + x[k], 0);
  const size = `${n.toLocaleString('en-US')} callbacks, median of ${rounds}`;
  return [
    row(
      `d. ${name}: ${WORKERS} workers, one host at the default cap of 20 (${size}; baseline: one worker, same server, same run)`,
      m(r.three, 'perSecond'),
      'callbacks/s',
      {
        baseline: m(r.one, 'perSecond'),
        target: 0.9 * m(r.one, 'perSecond'),
      },
    ),
    row(`  ${name}: webhook-ids the receiver saw exactly once, all ${rounds} rounds of ${WORKERS} workers`, sum(r.three, 'once'), 'ids', {
      target: n * rounds,
    }),
    row(`  ${name}: ids seen twice or more, or never, or not ours`, sum(r.three, 'twice') + sum(r.three, 'missing'), 'ids', {
      target: 0,
      higherIsBetter: false,
    }),
    row(`  ${name}: callbacks not succeeded on exactly one attempt (database)`, sum(r.three, 'notOnce'), '', { target: 0, higherIsBetter: false }),
    row(`  ${name}: Postgres CPU per callback, ${WORKERS} workers (baseline: one worker)`, m(r.three, 'postgres'), 'µs', {
      baseline: m(r.one, 'postgres'),
      higherIsBetter: false,
    }),
    row(`  ${name}: workers' CPU per callback, all ${WORKERS} (baseline: one worker)`, m(r.three, 'worker'), 'µs', {
      baseline: m(r.one, 'worker'),
      higherIsBetter: false,
    }),
    row(`  ${name}: claim statements per 1,000 callbacks (baseline: one worker)`, (m(r.three, 'claims') * 1000) / n, '', {
      baseline: (m(r.one, 'claims') * 1000) / n,
      higherIsBetter: false,
    }),
    row(`  ${name}: write-backs per 1,000 callbacks (baseline: one worker)`, (m(r.three, 'writeBacks') * 1000) / n, '', {
      baseline: (m(r.one, 'writeBacks') * 1000) / n,
      higherIsBetter: false,
    }),
    row(`  ${name}: mean claim statement (baseline: one worker)`, m(r.three, 'claimMs'), 'ms', { baseline: m(r.one, 'claimMs'), higherIsBetter: false }),
  ];
}

export async function workersScenario(server, { n = N, rounds = ROUNDS } = {}) {
  const url = await freshDatabase(server, 'bench_workers');
  const db = await connect(url);
  const receiver = await BenchReceiver.start({ record: true });
  try {
    const side = { url, db, backendPid: await backendPidOf(db) };
    const { rows } = await db.query(`SELECT current_setting('server_version') AS version, current_setting('jit') AS jit`);
    await workersRound(side, receiver, 1, 2_000); // not counted: the first run migrates the database; plans, caches
    const r = { one: [], three: [] };
    for (let round = 0; round < rounds; round++) {
      for (const count of round % 2 === 0 ? [1, WORKERS] : [WORKERS, 1]) {
        const result = await workersRound(side, receiver, count, n);
        (count === 1 ? r.one : r.three).push(result);
        process.stderr.write(`round ${round + 1}, ${count} worker(s): ${result.perSecond.toFixed(0)} callbacks/s, ${result.claims} claims\n`);
      }
    }
    return workerRows(`PostgreSQL ${rows[0].version} (jit = ${rows[0].jit})`, r, { n, rounds });
  } finally {
    await db.end();
    await receiver.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main((server) => workersScenario(server), benchPostgres);
}
