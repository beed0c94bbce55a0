// A noisy neighbour: one destination at its cap (20 in flight, each call held 200 ms)
// with 100,000 due callbacks waiting, and 10,000 callbacks to another destination
// (also capped at 20, answering at once) committed after them. How fast the second
// destination is served, against the same 10,000 with no backlog, same run. The
// backlog's rows are the oldest due ones: a claim must pass over them without
// reading them all (ClaimRepository: a bounded front walk, then host by host).
//   node bench/backlog.bench.mjs            (BENCH_BACKLOG to change the backlog)
import { timeDispatch } from './dispatch.bench.mjs';
import { BenchReceiver } from './lib/receiver.mjs';
import { connect, freshDatabase, main, row, startService, waitUntil } from './lib/harness.mjs';
import { benchKeyId, seedDue } from './lib/seed.mjs';

const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 100_000);
const N = 10_000;

/** Callbacks/s to the fast destination, with `backlog` due rows of the slow one ahead of them. */
async function behindBacklog(server, backlog) {
  const databaseUrl = await freshDatabase(server, 'bench_backlog');
  const receiver = await BenchReceiver.start({ hosts: ['127.0.0.1', '127.0.0.2'] });
  const service = await startService(databaseUrl, { DISPATCH_CONCURRENCY: '200', HOST_MAX_IN_FLIGHT: '20' });
  const db = await connect(databaseUrl);
  try {
    if (backlog > 0) {
      await seedDue(db, await benchKeyId(db), [`${receiver.url('127.0.0.2')}/slow?sleep=200`], backlog);
      // The slow destination fills its cap; from then on its rows wait at the front.
      await waitUntil(async () => (await receiver.stats()).maxActive >= 20, 10_000);
    }
    return (await timeDispatch(db, receiver, N, { path: '/fast' })).perSecond; // to the receiver's first host, 127.0.0.1
  } finally {
    await db.end();
    await service.stop();
    await receiver.close();
  }
}

export async function backlogScenario(server) {
  const alone = await behindBacklog(server, 0);
  const behind = await behindBacklog(server, BACKLOG);
  return [
    row(
      `${N.toLocaleString('en-US')} callbacks to a destination at cap 20, behind ${BACKLOG.toLocaleString('en-US')} due rows of another at its cap (baseline: no backlog, same run)`,
      behind,
      'calls/s',
      { baseline: alone },
    ),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(backlogScenario);
}
