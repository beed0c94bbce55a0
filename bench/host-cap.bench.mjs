// One destination at the default per-host cap (HOST_MAX_IN_FLIGHT=20): how fast the
// service delivers to a single customer endpoint that answers at once. The cap
// counts a callback until its outcome is written back, so here each freed slot goes
// through a write-back and a claim before it is used again; next to the same run with
// the cap out of the way (1,000), same receiver, same run.
//   node bench/host-cap.bench.mjs
import { timeDispatch } from './dispatch.bench.mjs';
import { BenchReceiver } from './lib/receiver.mjs';
import { connect, freshDatabase, main, row, startService } from './lib/harness.mjs';

const N = 10_000;

async function oneHost(server, cap) {
  const databaseUrl = await freshDatabase(server, `bench_host_cap_${cap}`);
  const receiver = await BenchReceiver.start({ record: false });
  const service = await startService(databaseUrl, { DISPATCH_CONCURRENCY: '200', HOST_MAX_IN_FLIGHT: String(cap) });
  const db = await connect(databaseUrl);
  try {
    await timeDispatch(db, receiver, 2_000); // warm
    return (await timeDispatch(db, receiver, N)).perSecond;
  } finally {
    await db.end();
    await service.stop();
    await receiver.close();
  }
}

export async function hostCapScenario(server) {
  const uncapped = await oneHost(server, 1_000);
  const capped = await oneHost(server, 20);
  return [row(`one destination at the default cap of 20 in flight (baseline: cap 1,000, same run)`, capped, 'calls/s', { baseline: uncapped })];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(hostCapScenario);
}
