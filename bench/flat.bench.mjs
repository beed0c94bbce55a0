// Finished rows must not slow the hot path: the end-to-end dispatch scenario again,
// on a database that already holds a million finished callbacks and their attempts
// (30 days of them in the service's time partitions), next to the same scenario on
// empty tables in the same run.
//   node bench/flat.bench.mjs
// BENCH_FLAT_ROWS=10000000 holds ten million instead (seeded once, about ten minutes,
// kept on the bench server as bench_10m), and runs the whole set against smaller tables
// in the same run: dispatch, ingest, status reads, the first page of failed callbacks,
// a 30-day latency history, and a drop of the oldest partition while a dispatch runs.
import { dispatchEnv, dispatchScenario, timeDispatch } from './dispatch.bench.mjs';
import { ingestScenario } from './ingest.bench.mjs';
import { timeLatencyHistory } from './latency-history.mjs';
import { BENCH_KEY, connect, freshDatabase, main, row, startService } from './lib/harness.mjs';
import { historyDatabase, trimToHistory } from './lib/million.mjs';
import { BenchReceiver } from './lib/receiver.mjs';
import { historySlots, partitionRepositoryOn } from './lib/seed.mjs';
import { statusScenario } from './status.bench.mjs';

const ROWS = Number(process.env.BENCH_FLAT_ROWS ?? 1_000_000);
/** Setting BENCH_FLAT_ROWS runs the whole set, not dispatch alone. */
const ALL = process.env.BENCH_FLAT_ROWS !== undefined;
/**
 * The reads' smaller tables: a history of this many rows (the same 30 days and
 * partitions), as a status read needs callbacks to read and a page of failed ones
 * needs 100 of them past its cursor.
 */
const SMALL = 200_000;

const millions = (n) => `${(n / 1_000_000).toLocaleString('en-US')}M`;

export async function flatScenario(server, { rows = ROWS, all = ALL } = {}) {
  const size = millions(rows);
  const emptyUrl = await freshDatabase(server, 'bench_dispatch');
  const historyUrl = await historyDatabase(server, rows);
  const empty = await dispatchScenario(emptyUrl, 'empty tables', { accuracy: false });
  const full = await dispatchScenario(historyUrl, `${size} finished rows`, { accuracy: false });
  // Each run is first divided by the bare undici window measured next to it, so a
  // slower spell of the machine during one of the two runs does not count as the
  // tables' doing.
  const results = [
    full[0],
    row('  same, as a share of the run on empty tables (each against its own undici baseline)', full[0].ratio / empty[0].ratio, '×', { target: 0.9 }),
  ];
  if (!all) return results;
  await trim(historyUrl);

  // Ingest: each against the empty tables' figure (its own baselines are stored
  // rows, which the history would slow alike, and the framework's floor).
  const ingestEmpty = await ingestScenario(await freshDatabase(server, 'bench_ingest'));
  const ingestFull = await ingestScenario(historyUrl);
  await trim(historyUrl);
  results.push(ingestFull[0], row('  same, as a share of empty tables', ingestFull[0].figure / ingestEmpty[0].figure, '×', { target: 0.9 }));
  results.push(
    ingestFull[1],
    row('  same, as a share of empty tables (each against its own GET /health/live)', ingestFull[1].ratio / ingestEmpty[1].ratio, '×', { target: 0.9 }),
  );

  // Reads, each against its service's own GET /health/live.
  const smallUrl = await historyDatabase(server, SMALL);
  const readsSmall = await statusScenario(server, { databaseUrl: smallUrl, label: millions(SMALL), firstPage: true });
  const readsFull = await statusScenario(server, { databaseUrl: historyUrl, label: size, firstPage: true });
  readsFull.forEach((r, i) => {
    results.push(
      r,
      row(`  same, as a share of ${millions(SMALL)} rows (each against its own GET /health/live)`, r.ratio / readsSmall[i].ratio, '×', { target: 0.9 }),
    );
  });

  // The dashboard's latency history over the seeded 30 days (its default bucket, 1 h).
  const slots = await historySlots();
  const qs = `from=${new Date(slots[0].from).toISOString()}&to=${new Date(slots.at(-1).to).toISOString()}`;
  const history = {};
  for (const [name, url] of [
    ['empty', emptyUrl],
    ['small', smallUrl],
    ['full', historyUrl],
  ]) {
    const service = await startService(url, { ROLE: 'api', API_RATE_LIMIT_PER_SEC: '0' });
    try {
      // 49 reads after the first: over 5 or 9 the fresh process's own warm-up moved the medians by 1-3 ms (10-40%).
      history[name] = await timeLatencyHistory(service.url, BENCH_KEY, qs, 49);
    } finally {
      await service.stop();
    }
  }
  const attempts = (h) => h.body.items.reduce((s, b) => s + b.count, 0).toLocaleString('en-US');
  results.push(
    row(
      `30-day latency history GET /v1/history/latency (1 h buckets), ${size} rows (${attempts(history.full)} attempts), median of the 49 reads after the first`,
      history.full.median,
      'ms',
      {
        baseline: history.empty.median,
        higherIsBetter: false,
      },
    ),
    row(`  same, the first read after the history's stored buckets were cleared (it computes and stores them)`, history.full.first, 'ms', {
      baseline: history.empty.first,
      higherIsBetter: false,
    }),
    row(`  same, ${millions(SMALL)} rows (${attempts(history.small)} attempts)`, history.small.median, 'ms', {
      baseline: history.empty.median,
      higherIsBetter: false,
    }),
  );

  results.push(...(await dropDuringDispatch(historyUrl, slots[0], size)));
  return results;
}

/** Removes what the runs added on top of the history at `url`. */
async function trim(url) {
  const db = await connect(url);
  try {
    await trimToHistory(db);
  } finally {
    await db.end();
  }
}

/**
 * Drops the oldest slot's partitions (callback by done_at, attempt by started_at) with
 * the service's own PartitionRepository.dropPartition (DETACH … CONCURRENTLY, then
 * DROP TABLE), a second into a dispatch of `n` callbacks to a local receiver, and
 * compares the longest gap between deliveries at the receiver during the drop with the
 * longest gap over the same stretch of a dispatch without it (run first, same service).
 * The slot is seeded again by the next run's historyDatabase.
 */
export async function dropDuringDispatch(databaseUrl, slot, size, n = 20_000) {
  const window = 200;
  const receiver = await BenchReceiver.start({ record: true });
  const service = await startService(databaseUrl, dispatchEnv(window));
  const db = await connect(databaseUrl);
  const ddl = await connect(databaseUrl);
  try {
    const repo = await partitionRepositoryOn(ddl);
    const partitionRows = Number((await db.query(`SELECT count(*) FROM ${slot.callback}`)).rows[0].count);
    const attemptRows = Number((await db.query(`SELECT count(*) FROM ${slot.attempt}`)).rows[0].count);
    await timeDispatch(db, receiver, 2_000); // warm
    const LEAD_MS = 1_000;
    /** One dispatch of n, with `during` run LEAD_MS after it starts; the arrivals at the receiver (epoch ms, sorted) and `during`'s stretch. */
    const run = async (during) => {
      await receiver.reset();
      const started = performance.timeOrigin + performance.now();
      const sending = timeDispatch(db, receiver, n);
      await new Promise((r) => setTimeout(r, LEAD_MS));
      const from = performance.timeOrigin + performance.now();
      const extra = await during();
      const to = performance.timeOrigin + performance.now();
      const result = await sending;
      const arrived = Float64Array.from((await receiver.records()).arrived).sort();
      return { started, from, to, extra, result, arrived };
    };
    const longestGap = (arrived, from, to) => {
      let gap = 0;
      for (let i = 1; i < arrived.length; i++) if (arrived[i] > from && arrived[i - 1] < to) gap = Math.max(gap, arrived[i] - arrived[i - 1]);
      return gap;
    };
    const control = await run(async () => new Promise((r) => setTimeout(r, 300)));
    const dropped = await run(async () => {
      const t0 = performance.now();
      await repo.dropPartition('callback', slot.callback, false);
      const t1 = performance.now();
      await repo.dropPartition('attempt', slot.attempt, false);
      return { callbackMs: t1 - t0, attemptMs: performance.now() - t1 };
    });
    // The same stretch of the run without the drop: as long, as far from its start.
    const stretch = dropped.to - dropped.from;
    const gapDrop = longestGap(dropped.arrived, dropped.from, dropped.to);
    const gapControl = longestGap(control.arrived, control.from, control.from + stretch);
    const covered = dropped.arrived.at(-1) > dropped.to;
    return [
      row(
        `drop of the oldest callback partition (${partitionRows.toLocaleString('en-US')} rows), ${size} history, during a dispatch`,
        dropped.extra.callbackMs,
        'ms',
        {
          target: 1000,
          higherIsBetter: false,
        },
      ),
      row(`  … and of its attempt partition (${attemptRows.toLocaleString('en-US')} rows)`, dropped.extra.attemptMs, 'ms', {
        target: 1000,
        higherIsBetter: false,
      }),
      row(
        `  longest gap between deliveries during both drops${covered ? '' : ' (the dispatch ended before the drops did)'}; baseline: the same stretch of a dispatch without`,
        gapDrop,
        'ms',
        { baseline: gapControl, target: 100, higherIsBetter: false },
      ),
      row(`  dispatch rate with the drops (${n.toLocaleString('en-US')} callbacks); baseline: without`, dropped.result.perSecond, 'calls/s', {
        baseline: control.result.perSecond,
      }),
    ];
  } finally {
    await ddl.end();
    await db.end();
    await service.stop();
    await receiver.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(flatScenario);
}
