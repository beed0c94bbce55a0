// The service behind PgBouncer in transaction mode against the same service connected
// directly, same run, taking turns: bench/peer.bench.mjs's service round (20,000
// callbacks ingested through the API, ROLE=api, then one worker drains them into one
// receiver that answers at once). Through the pooler every process has DATABASE_URL
// on PgBouncer (statements unnamed, each in a transaction that sets its own settings)
// and DATABASE_DIRECT_URL on the server (LISTEN, the leader's lock, migrations).
// Needs Debian's pgbouncer package.
//   node bench/pooler.bench.mjs     (BENCH_N, BENCH_ROUNDS)
import { startPgBouncer } from '../scripts/pgbouncer.mjs';
import { processCpuMs } from './lib/cpu.mjs';
import { backendPidOf, connect, freshDatabase, main, median, row, startService } from './lib/harness.mjs';
import { BenchReceiver } from './lib/receiver.mjs';
import { serviceRound } from './peer.bench.mjs';

const N = Number(process.env.BENCH_N ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

/** A service round with `env` for the API and the worker; PgBouncer's CPU (`poolerPid`) read around the whole round. */
async function round(env, db, backendPid, receiver, n, poolerPid) {
  const api = await startService(env.DATABASE_URL, { ...env, ROLE: 'api' });
  try {
    const before = poolerPid ? processCpuMs(poolerPid) : 0;
    const result = await serviceRound(env.DATABASE_URL, api, db, backendPid, receiver, n, { env });
    return { ...result, pooler: poolerPid ? ((processCpuMs(poolerPid) - before) * 1000) / n : 0 };
  } finally {
    await api.stop();
  }
}

export async function poolerScenario(server, { n = N, rounds = ROUNDS } = {}) {
  const directUrl = await freshDatabase(server, 'bench_pooler');
  const bouncer = await startPgBouncer(server.serverUrl('postgres'));
  const receiver = await BenchReceiver.start();
  const db = await connect(directUrl);
  const backendPid = await backendPidOf(db);
  const direct = { DATABASE_URL: directUrl };
  const pooled = { DATABASE_URL: bouncer.url('bench_pooler'), DATABASE_DIRECT_URL: directUrl };
  try {
    // A warm-up turn of each (the receiver, the server's caches), not counted.
    await round(direct, db, backendPid, receiver, 2_000);
    await round(pooled, db, backendPid, receiver, 2_000, bouncer.pid);
    const directRuns = [];
    const pooledRuns = [];
    for (let i = 0; i < rounds; i++) {
      directRuns.push(await round(direct, db, backendPid, receiver, n));
      pooledRuns.push(await round(pooled, db, backendPid, receiver, n, bouncer.pid));
    }
    const m = (runs, k) => median(runs.map((r) => r[k]));
    const cpu = (k, what) =>
      row(`  ${what} CPU per callback, through the pooler (baseline: direct)`, m(pooledRuns, k), 'µs', { baseline: m(directRuns, k), higherIsBetter: false });
    return [
      row(
        `one worker drains ${n.toLocaleString('en-US')} callbacks through PgBouncer 1.18, transaction mode (baseline: the same, DATABASE_URL direct; median of ${rounds}, taking turns)`,
        m(pooledRuns, 'perSecond'),
        'callbacks/s',
        { baseline: m(directRuns, 'perSecond'), target: 0.8 * m(directRuns, 'perSecond') },
      ),
      cpu('worker', 'the worker process'),
      cpu('postgres', 'Postgres'),
      row('  PgBouncer CPU per callback, ingest and drain', m(pooledRuns, 'pooler'), 'µs', { higherIsBetter: false }),
    ];
  } finally {
    await db.end();
    await receiver.close();
    await bouncer.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(async (server) => poolerScenario(server));
}
