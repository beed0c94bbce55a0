// The two hot-path statements alone, through the service's own repositories: claim
// `DISPATCH_CLAIM_BATCH`-sized slices of due rows (ClaimRepository.claimDue), then
// write their outcomes back (OutcomeRepository.recordOutcomes), until 20,000 rows
// are done; on empty tables, with a million finished rows, and with a million idle
// destinations in the host table, same run. No HTTP: this is the database's share
// of every dispatched callback. Also Postgres's CPU per row of each statement (all its
// processes, /proc/<pid>/schedstat around each statement), on empty tables.
//   node bench/claim.bench.mjs              (BENCH_CLAIM to change the slice, 200)
import { postgresRunNs } from './lib/cpu.mjs';
import { backendPidOf, connect, distModule, freshDatabase, main, median, row, startService } from './lib/harness.mjs';
import { millionRowsDatabase } from './lib/million.mjs';
import { benchKeyId, seedDue } from './lib/seed.mjs';

const N = 20_000;
const SLICE = Number(process.env.BENCH_CLAIM ?? 200);

/** A fresh database whose `host` table holds `n` idle destinations, as years of traffic to many customers leave it. */
async function manyHostsDatabase(server, n) {
  const url = await freshDatabase(server, 'bench_claim_hosts');
  const service = await startService(url, { ROLE: 'api' });
  await service.stop();
  const db = await connect(url);
  try {
    await db.query(`INSERT INTO host (host) SELECT 'https://customer-' || i || '.example.com:443' FROM generate_series(1, $1::int) AS i`, [n]);
    await db.query('VACUUM ANALYZE host');
  } finally {
    await db.end();
  }
  return url;
}

async function cycles(databaseUrl) {
  const service = await startService(databaseUrl, { ROLE: 'api' }); // migrates, makes the key
  await service.stop();
  const { DispatchDatabase } = await distModule('database/dispatch-database.js');
  const { ClaimRepository } = await distModule('dispatch/claim.repository.js');
  const { OutcomeRepository } = await distModule('dispatch/outcome.repository.js');
  const { toRecordedOutcome } = await distModule('dispatch/request.builder.js');
  const { loadConfig } = await distModule('config/app.config.js');
  const { MetricsService } = await distModule('metrics/metrics.service.js');
  const { directTarget } = await distModule('database/database.target.js');
  const { CaughtErrors } = await distModule('logging/caught-errors.js');
  const config = loadConfig({}, { hostMaxInFlight: 10_000 });
  const dispatchDb = new DispatchDatabase(directTarget(databaseUrl), config, new CaughtErrors());
  const claims = new ClaimRepository(dispatchDb, config, new MetricsService());
  const outcomes = new OutcomeRepository(dispatchDb, config);
  const db = await connect(databaseUrl);
  const claimMs = [];
  const writeMs = [];
  let claimNs = 0;
  let writeNs = 0;
  try {
    await seedDue(db, await benchKeyId(db), ['http://127.0.0.1:9/hook'], N);
    const backendPid = await backendPidOf(db);
    const t0 = performance.now();
    for (let done = 0; done < N;) {
      let t = performance.now();
      let ns = postgresRunNs(backendPid);
      const rows = await claims.claimDue('bench', SLICE, 30_000, []);
      claimMs.push(performance.now() - t);
      claimNs += postgresRunNs(backendPid) - ns;
      if (rows.length === 0) throw new Error(`claim found nothing after ${done} rows`);
      const result = { outcome: 'success', statusCode: 200, responseHeaders: {}, responseBody: 'ok', trace: { startedAt: new Date(), durationMs: 1 } };
      t = performance.now();
      ns = postgresRunNs(backendPid);
      await outcomes.recordOutcomes(
        'bench',
        rows.map((r) => toRecordedOutcome(r, result, config)),
      );
      writeMs.push(performance.now() - t);
      writeNs += postgresRunNs(backendPid) - ns;
      done += rows.length;
    }
    return {
      perSecond: N / ((performance.now() - t0) / 1000),
      claim: median(claimMs),
      write: median(writeMs),
      claimCpuUs: claimNs / 1000 / N,
      writeCpuUs: writeNs / 1000 / N,
    };
  } finally {
    await db.end();
    await dispatchDb.onApplicationShutdown();
  }
}

export async function claimScenario(server) {
  const empty = await cycles(await freshDatabase(server, 'bench_claim'));
  const million = await cycles(await millionRowsDatabase(server));
  const hosts = await cycles(await manyHostsDatabase(server, 1_000_000));
  return [
    row(`claim ${SLICE} + write back ${SLICE}, database only, empty tables: rows/s`, empty.perSecond, 'rows/s'),
    row(`  median claim statement, empty tables`, empty.claim, 'ms', { higherIsBetter: false }),
    row(`  median write-back statement, empty tables`, empty.write, 'ms', { higherIsBetter: false }),
    row(`  Postgres CPU per claimed row, empty tables`, empty.claimCpuUs, 'µs', { higherIsBetter: false }),
    row(`  Postgres CPU per written-back row (attempt inserted), empty tables`, empty.writeCpuUs, 'µs', { higherIsBetter: false }),
    row(`  median claim statement, 1M finished rows (baseline: empty tables)`, million.claim, 'ms', { baseline: empty.claim, higherIsBetter: false }),
    row(`  median write-back statement, 1M finished rows (baseline: empty tables)`, million.write, 'ms', { baseline: empty.write, higherIsBetter: false }),
    row(`  median claim statement, 1M idle destinations in \`host\` (baseline: empty tables)`, hosts.claim, 'ms', {
      baseline: empty.claim,
      higherIsBetter: false,
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(claimScenario);
}
