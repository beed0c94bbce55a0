// Pick-up latency on an idle service: from the moment the client has the 202 of a
// one-callback batch to the moment the receiver sees that callback arrive.
//   node bench/latency.bench.mjs            (BENCH_SAMPLES to change the count)
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { BenchReceiver } from './lib/receiver.mjs';
import { BENCH_KEY, freshDatabase, main, percentile, row, startService } from './lib/harness.mjs';

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
const now = () => performance.timeOrigin + performance.now();

/**
 * Starts the service (ROLE=all) on `databaseUrl`, posts `samples` one-callback batches
 * one at a time, the service idle between them, and returns each one's ms from its 202
 * to its arrival at the receiver.
 */
export async function pickUpLatencies(databaseUrl, samples = SAMPLES) {
  const receiver = await BenchReceiver.start({ record: true });
  const service = await startService(databaseUrl);
  const api = new Pool(service.url, { connections: 1 });
  const hook = `${receiver.url()}/hook`;
  const post = async () => {
    const res = await api.request({
      path: '/v1/batches',
      method: 'POST',
      headers: { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ callbacks: [{ url: hook, body: { event: 'latency' } }] }),
    });
    const acceptedAt = now();
    const json = await res.body.json();
    if (res.statusCode !== 202) throw new Error(`POST /v1/batches answered ${res.statusCode}: ${JSON.stringify(json)}`);
    return { id: json.callbacks[0].id, acceptedAt };
  };
  try {
    for (let i = 0; i < 10; i++) await post(); // warm-up, not measured
    await receiver.waitForCount(10, 10_000);
    await receiver.reset();
    const sent = [];
    for (let i = 0; i < samples; i++) {
      sent.push(await post());
      await receiver.waitForCount(i + 1, 5_000);
      await sleep(20 + (i % 7) * 5); // idle between samples; varied so ticks do not line up
    }
    const rec = await receiver.records();
    const arrived = new Map(rec.ids.map((id, i) => [id, rec.arrived[i]]));
    return sent.map((s) => arrived.get(s.id) - s.acceptedAt);
  } finally {
    await api.close();
    await service.stop();
    await receiver.close();
  }
}

export async function latencyScenario(databaseUrl) {
  const latencies = await pickUpLatencies(databaseUrl);
  return [
    row(`pick-up latency, idle service: 202 → receiver sees it, p50 (${SAMPLES} samples)`, percentile(latencies, 50), 'ms', {
      target: 10,
      higherIsBetter: false,
    }),
    row('pick-up latency, idle service, p99', percentile(latencies, 99), 'ms', { target: 50, higherIsBetter: false }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(async (server) => latencyScenario(await freshDatabase(server, 'bench_latency')));
}
