// The same scenarios on two Postgres servers, taking turns: the embedded PostgreSQL 18
// the service is built and measured on (benchPostgres's own, no JIT), and a stock
// server as users run it, given as BENCH_STOCK_URL (e.g. Debian's postgresql-15, JIT
// on). Each row is the stock server's figure with the embedded one's as its baseline:
//   a. one worker drains 20,000 callbacks ingested through the API, host cap lifted
//      (bench:peer's service round): stock ≥ 0.9× embedded;
//   b. pick-up latency on an idle service, p99 (bench:latency): stock ≤ 2× embedded;
//   c. a tenant's 10 callbacks under another's 40,000 on 100 hosts (bench:fairness):
//      the last arrives ≤ 250 ms after its 202, on each server;
//   d. three workers on 20,000 callbacks to one host at the default cap (20): every
//      webhook-id arrives once at the receiver, and the three move ≥ 0.9× one worker's
//      rate, same server, same run.
// Every round runs each scenario on both servers, the order swapped every round, and
// the figures are medians over BENCH_ROUNDS (3) rounds. Run it alone on the machine.
//   BENCH_STOCK_URL=postgresql://postgres:postgres@127.0.0.1:5432/postgres node bench/servers.bench.mjs
//   (BENCH_N, BENCH_ROUNDS, BENCH_SAMPLES; DATABASE_URL is not read)
import { loadavg } from 'node:os';
import { tenantUnderFlood } from './fairness.bench.mjs';
import { pickUpLatencies } from './latency.bench.mjs';
import { backendPidOf, connect, embeddedBenchPostgres, freshDatabase, main, median, percentile, row, serverAt, startService } from './lib/harness.mjs';
import { BenchReceiver } from './lib/receiver.mjs';
import { serviceRound } from './peer.bench.mjs';
import { checkAlone, statementTimes, workerRows, WORKERS, workersRound } from './workers.bench.mjs';

const N = Number(process.env.BENCH_N ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);

/** What the server is: version and JIT, for the table's heading. */
async function describe(server) {
  const db = await connect(server.serverUrl('postgres'));
  try {
    const { rows } = await db.query(`SELECT current_setting('server_version') AS version, pg_jit_available() AS jit_available, current_setting('jit') AS jit`);
    const r = rows[0];
    return `PostgreSQL ${r.version}, JIT ${r.jit_available ? 'available' : 'not available'}, jit = ${r.jit}`;
  } finally {
    await db.end();
  }
}

/** Scenario a's turn: bench:peer's service round, with the worker's statement times. */
async function drainRound(side, receiver, n) {
  await checkAlone(side.drainDb);
  const api = await startService(side.drainUrl, { ROLE: 'api' });
  try {
    return await serviceRound(side.drainUrl, api, side.drainDb, side.drainPid, receiver, n, { inspect: statementTimes });
  } finally {
    await api.stop();
  }
}

const started = performance.now();
/** Progress on stderr (the table goes to stdout). */
const log = (line) => process.stderr.write(`[servers ${((performance.now() - started) / 1000).toFixed(0)} s, load ${loadavg()[0].toFixed(1)}] ${line}\n`);

/** One server's databases for scenarios a and d (kept over the rounds, as bench:peer keeps its own), warmed once. */
async function openSide(name, server, receivers) {
  const drainUrl = await freshDatabase(server, 'bench_servers_drain');
  const workersUrl = await freshDatabase(server, 'bench_servers_workers');
  const side = { name, server, drainUrl, workersUrl, drainDb: await connect(drainUrl), workersDb: await connect(workersUrl), label: await describe(server) };
  side.drainPid = await backendPidOf(side.drainDb);
  side.workersPid = await backendPidOf(side.workersDb);
  log(`${name}: ${side.label}, warming`);
  // Not counted: the first run on a database (the service migrates it; plans, caches).
  await drainRound(side, receivers.drain, 2_000);
  await workersRound(workersSide(side), receivers.workers, 1, 2_000);
  return side;
}

/** Scenario d's database of a side, as workersRound takes it. */
const workersSide = (side) => ({ url: side.workersUrl, db: side.workersDb, backendPid: side.workersPid });

async function closeSide(side) {
  await side.drainDb?.end();
  await side.workersDb?.end();
}

const fixed = (x) => (typeof x === 'number' && !Number.isInteger(x) ? Number(x.toFixed(2)) : x);
/** One turn's figures, for the log. */
const brief = (result) => JSON.stringify(Array.isArray(result) ? { p50: percentile(result, 50), p99: percentile(result, 99) } : result, (k, v) => fixed(v));

/** Each scenario's figures on each server, one list per figure over the rounds. */
async function measure(sides, receivers, rounds) {
  const runs = Object.fromEntries(sides.map((s) => [s.name, { drain: [], latency: [], tenant: [], one: [], three: [] }]));
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? sides : [...sides].reverse();
    /** Runs `turn` on each server in this round's order, keeping each result in its list `key`. */
    const each = async (scenario, key, turn) => {
      for (const side of order) {
        log(`round ${round + 1}, ${scenario}, ${side.name}`);
        const result = await turn(side);
        runs[side.name][key].push(result);
        log(`  ${key}: ${brief(result)}`);
      }
    };
    await each('a', 'drain', (side) => drainRound(side, receivers.drain, N));
    await each('b', 'latency', async (side) => pickUpLatencies(await freshDatabase(side.server, 'bench_servers_latency'), SAMPLES));
    await each('c', 'tenant', async (side) => tenantUnderFlood(await freshDatabase(side.server, 'bench_servers_tenants'), { alone: false }));
    // One worker first in even rounds, three first in odd ones: the table grows by 2 × N a round.
    for (const count of round % 2 === 0 ? [1, WORKERS] : [WORKERS, 1]) {
      await each(`d, ${count} worker${count > 1 ? 's' : ''}`, count === 1 ? 'one' : 'three', (side) =>
        workersRound(workersSide(side), receivers.workers, count, N),
      );
    }
  }
  return runs;
}

export async function serversScenario(embeddedServer, stockUrl, { rounds = ROUNDS } = {}) {
  if (!stockUrl) throw new Error('BENCH_STOCK_URL is not set: the stock server to compare, e.g. postgresql://postgres:postgres@127.0.0.1:5432/postgres');
  const receivers = { drain: await BenchReceiver.start(), workers: await BenchReceiver.start({ record: true }) };
  const sides = [];
  try {
    sides.push(await openSide('embedded', embeddedServer, receivers));
    sides.push(await openSide('stock', serverAt(stockUrl), receivers));
    const runs = await measure(sides, receivers, rounds);
    const [emb, stock] = [runs.embedded, runs.stock];
    const m = (list, k) => median(list.map((x) => x[k]));
    const p99 = (list) => median(list.map((l) => percentile(l, 99)));
    const p50 = (list) => median(list.map((l) => percentile(l, 50)));
    const size = `${N.toLocaleString('en-US')} callbacks, median of ${rounds}`;
    const rows = [
      row(
        `a. one worker drains ${size}, ingested through the API, host cap lifted: stock (baseline: embedded 18)`,
        m(stock.drain, 'perSecond'),
        'callbacks/s',
        {
          baseline: m(emb.drain, 'perSecond'),
          target: 0.9 * m(emb.drain, 'perSecond'),
        },
      ),
      row('  Postgres CPU per callback, same drains (baseline: embedded 18)', m(stock.drain, 'postgres'), 'µs', {
        baseline: m(emb.drain, 'postgres'),
        higherIsBetter: false,
      }),
      row('  worker CPU per callback (baseline: embedded 18)', m(stock.drain, 'worker'), 'µs', { baseline: m(emb.drain, 'worker'), higherIsBetter: false }),
      row("  mean claim statement, the worker's /metrics (baseline: embedded 18)", m(stock.drain, 'claimMs'), 'ms', {
        baseline: m(emb.drain, 'claimMs'),
        higherIsBetter: false,
      }),
      row('  mean write-back statement (baseline: embedded 18)', m(stock.drain, 'writeBackMs'), 'ms', {
        baseline: m(emb.drain, 'writeBackMs'),
        higherIsBetter: false,
      }),
      row(`b. pick-up latency, idle service, 202 → receiver, p99 of ${SAMPLES} a round: stock (baseline: embedded 18)`, p99(stock.latency), 'ms', {
        baseline: p99(emb.latency),
        target: 2 * p99(emb.latency),
        higherIsBetter: false,
      }),
      row('  p50 (baseline: embedded 18)', p50(stock.latency), 'ms', { baseline: p50(emb.latency), higherIsBetter: false }),
      row("c. tenant B's 10 callbacks under A's 40,000 on 100 hosts, last arrival after B's 202: stock (baseline: embedded 18)", m(stock.tenant, 'bMs'), 'ms', {
        baseline: m(emb.tenant, 'bMs'),
        target: 250,
        higherIsBetter: false,
      }),
      row('  the same on the embedded 18', m(emb.tenant, 'bMs'), 'ms', { target: 250, higherIsBetter: false }),
      row("  tenant A's drain rate beside B: stock (baseline: embedded 18)", m(stock.tenant, 'rate'), 'calls/s', { baseline: m(emb.tenant, 'rate') }),
      ...workerRows('stock', stock, { n: N, rounds }),
      ...workerRows('embedded 18', emb, { n: N, rounds }),
    ];
    console.log(`stock: ${sides[1].label}\nembedded: ${sides[0].label}`);
    return rows;
  } finally {
    for (const side of sides) await closeSide(side);
    await receivers.drain.close();
    await receivers.workers.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main((embedded) => serversScenario(embedded, process.env.BENCH_STOCK_URL), embeddedBenchPostgres);
}
