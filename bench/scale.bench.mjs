// Scale: 10,000 callbacks in flight at once. Receivers on 50 loopback addresses
// (127.0.0.2 … 127.0.0.51) each hold every request 2 s; one batch of 10,000 is
// posted and must be sent, answered and persisted within 2.5 s of its 202, with the
// service's peak RSS under 400 MB. The baseline, in the same run: a bare undici
// client sending the same 10,000 requests at once on fresh connections to the same
// receivers, first send → last answer (bench/lib/undici-burst.mjs). It shows what
// the receivers and the machine allow; the ratio is the service's share of the time.
//   node bench/scale.bench.mjs
import { BenchReceiver } from './lib/receiver.mjs';
import { BENCH_KEY, connect, freshDatabase, main, row, startService, waitUntil } from './lib/harness.mjs';
import { openCount } from './lib/seed.mjs';
import { undiciBurst } from './lib/undici-burst.mjs';

const TOTAL = 10_000;
const HOSTS = 50;
const SLEEP_MS = 2_000;

/** Seconds from `fromEpochMs` to the receivers' first arrival, last arrival and last answer since their reset. */
async function receiverTimeline(receiver, fromEpochMs) {
  const s = await receiver.stats();
  const after = (at) => (at - fromEpochMs) / 1000;
  return { maxActive: s.maxActive, firstArrived: after(s.firstArrivedAt), lastArrived: after(s.lastArrivedAt), lastAnswered: after(s.lastAnsweredAt) };
}

/** The baseline: the same burst from a bare undici client, after a warm-up burst without holds. */
async function baselineBurst(receiver) {
  const urls = (sleepMs) => receiver.urls.map((u) => `${u}/hook?sleep=${sleepMs}`);
  await undiciBurst({ urls: urls(0), total: 1_000 });
  await receiver.reset();
  const startedAt = performance.timeOrigin + performance.now();
  const result = await undiciBurst({ urls: urls(SLEEP_MS), total: TOTAL });
  if (result.failed > 0) throw new Error(`baseline: ${result.failed} of ${TOTAL} requests failed`);
  return { seconds: result.seconds, peakRssMb: result.peakRssMb, ...(await receiverTimeline(receiver, startedAt)) };
}

export async function scaleScenario(databaseUrl) {
  const hosts = Array.from({ length: HOSTS }, (_, i) => `127.0.0.${i + 2}`);
  const receiver = await BenchReceiver.start({ hosts });
  const baseline = await baselineBurst(receiver);
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
    const t = await receiverTimeline(receiver, performance.timeOrigin + acceptedAt);
    const lower = { higherIsBetter: false };
    return [
      row(
        `scale: ${TOTAL.toLocaleString('en-US')} callbacks, receivers hold 2 s on ${HOSTS} addresses: 202 → all persisted (baseline: bare undici, first send → last answer)`,
        seconds,
        's',
        { baseline: baseline.seconds, target: 2.5, ...lower },
      ),
      row('  most requests the receivers held at once', t.maxActive, 'requests', { baseline: baseline.maxActive, target: TOTAL }),
      row('  202 → first request at a receiver (baseline: from the first send)', t.firstArrived, 's', { baseline: baseline.firstArrived, ...lower }),
      row('  202 → last request at a receiver (baseline: from the first send)', t.lastArrived, 's', { baseline: baseline.lastArrived, ...lower }),
      row('  last answer → all persisted', seconds - t.lastAnswered, 's', lower),
      row("  service peak RSS (baseline: the bare undici client's)", service.memory().peakRssMb, 'MB', { baseline: baseline.peakRssMb, target: 400, ...lower }),
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
