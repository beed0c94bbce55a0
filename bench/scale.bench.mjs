// Scale: 10,000 callbacks in flight at once. Receivers on 50 loopback addresses
// (127.0.0.2 … 127.0.0.51) each hold every request 2 s; one batch of 10,000 is
// posted and must be sent, answered and persisted within 2.5 s of its 202, with the
// service's peak RSS under 400 MB.
//   node bench/scale.bench.mjs
import { BenchReceiver } from './lib/receiver.mjs';
import { BENCH_KEY, connect, freshDatabase, main, row, startService, waitUntil } from './lib/harness.mjs';
import { openCount } from './lib/seed.mjs';

const TOTAL = 10_000;
const HOSTS = 50;
const SLEEP_MS = 2_000;

export async function scaleScenario(databaseUrl) {
  const hosts = Array.from({ length: HOSTS }, (_, i) => `127.0.0.${i + 2}`);
  const receiver = await BenchReceiver.start({ hosts });
  const service = await startService(databaseUrl, {
    DISPATCH_CONCURRENCY: String(TOTAL),
    HOST_MAX_IN_FLIGHT: String(TOTAL / HOSTS),
    DISPATCH_CLAIM_BATCH: String(TOTAL),
  });
  const db = await connect(databaseUrl);
  const post = async (n, sleepMs) => {
    const callbacks = Array.from({ length: n }, (_, i) => ({ url: `${receiver.urls[i % HOSTS]}/hook?sleep=${sleepMs}`, body: { n: i } }));
    const res = await fetch(`${service.url}/v1/batches`, {
      method: 'POST',
      headers: { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ callbacks }),
    });
    const acceptedAt = performance.now();
    const json = await res.json();
    if (res.status !== 202) throw new Error(`POST /v1/batches answered ${res.status}: ${JSON.stringify(json).slice(0, 300)}`);
    return { batchId: json.id, acceptedAt };
  };
  try {
    const warm = await post(1_000, 0); // opens connections, warms every path
    await waitUntil(async () => (await openCount(db, warm.batchId)) === 0, 30_000, 50);
    await receiver.reset();
    const { batchId, acceptedAt } = await post(TOTAL, SLEEP_MS);
    await receiver.waitForCount(TOTAL, 30_000);
    await waitUntil(async () => (await openCount(db, batchId)) === 0, 30_000, 10);
    const seconds = (performance.now() - acceptedAt) / 1000;
    const { rows } = await db.query(`SELECT count(*)::int AS ok FROM callback WHERE batch_id = $1 AND status = 'succeeded'`, [batchId]);
    if (rows[0].ok !== TOTAL) throw new Error(`expected ${TOTAL} succeeded, got ${rows[0].ok}`);
    const { maxActive } = await receiver.stats();
    return [
      row(`scale: ${TOTAL.toLocaleString('en-US')} callbacks, receivers hold 2 s on ${HOSTS} addresses: 202 → all persisted`, seconds, 's', { target: 2.5, higherIsBetter: false }),
      row('  most requests the receivers held at once', maxActive, 'requests', { target: TOTAL }),
      row('  service peak RSS', service.memory().peakRssMb, 'MB', { target: 400, higherIsBetter: false }),
    ];
  } finally {
    await db.end();
    await service.stop();
    await receiver.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(async (server) => scaleScenario(await freshDatabase(server, 'bench_scale')));
}
