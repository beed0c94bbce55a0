// Finished rows must not slow the hot path: the end-to-end dispatch scenario again,
// on a database that already holds a million finished callbacks and their attempts,
// next to the same scenario on empty tables in the same run.
//   node bench/flat.bench.mjs
import { dispatchScenario } from './dispatch.bench.mjs';
import { freshDatabase, main, row } from './lib/harness.mjs';
import { millionRowsDatabase } from './lib/million.mjs';

export async function flatScenario(server) {
  const empty = await dispatchScenario(await freshDatabase(server, 'bench_dispatch'), 'empty tables', { accuracy: false });
  const million = await dispatchScenario(await millionRowsDatabase(server), '1M finished rows', { accuracy: false });
  // Each run is first divided by the bare undici window measured next to it, so a
  // slower spell of the machine during one of the two runs does not count as the
  // tables' doing.
  return [
    million[0],
    row('  same, as a share of the run on empty tables (each against its own undici baseline)', million[0].ratio / empty[0].ratio, '×', { target: 0.9 }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(flatScenario);
}
