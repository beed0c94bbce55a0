// What a receiver's transform costs the drain (issue 58): the same drain of N due
// callbacks to one receiver, through a small transform and without one, same service,
// same run, in turns (plain, transformed, plain, …), medians compared; and the
// sandbox's memory per cached transform (the service's resident memory before and
// after K receivers' transforms were compiled and run once each).
//   npm run bench:transform        (BENCH_N, BENCH_ROUNDS, BENCH_WINDOW, BENCH_TRANSFORMS to change the sizes)
// Needs dist/ (npm run build).
import { processCpuMs } from './lib/cpu.mjs';
import { BENCH_KEY, connect, freshDatabase, main, median, row, startService, waitUntil } from './lib/harness.mjs';
import { BenchReceiver } from './lib/receiver.mjs';
import { benchKeyId, openCount, seedDue } from './lib/seed.mjs';
import { dispatchEnv } from './dispatch.bench.mjs';

const N = Number(process.env.BENCH_N ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WINDOW = Number(process.env.BENCH_WINDOW ?? 200);
/** Receivers whose transforms are compiled for the memory figure: BENCH_TRANSFORMS (50). */
const TRANSFORMS = Number(process.env.BENCH_TRANSFORMS ?? 50);

/** A small transform of the kind users write: a field renamed, one added, a header set. */
const SMALL = `function handler(webhook) {
  const b = webhook.body;
  webhook.body = { type: b.event, id: b.n, receivedBy: webhook.receiver };
  webhook.headers['x-attempt'] = String(webhook.attempt);
  return webhook;
}`;

async function putReceiver(serviceUrl, name, settings) {
  const res = await fetch(`${serviceUrl}/v1/receivers/${name}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(settings),
  });
  if (!res.ok) throw new Error(`PUT /v1/receivers/${name}: ${res.status} ${await res.text()}`);
}

/** Drains `n` due callbacks of `receiverId` from their commit to the last write-back: calls/s and service CPU µs per call. */
async function drain(db, receiver, keyId, receiverId, n, pid) {
  const before = (await receiver.stats()).count;
  const cpu = processCpuMs(pid);
  const { batchId, committedAt } = await seedDue(db, keyId, [`${receiver.url()}/hook`], n, { receiverId });
  await receiver.waitForCount(before + n, 300_000);
  await waitUntil(async () => (await openCount(db, batchId)) === 0, 300_000, 5);
  const seconds = (performance.now() - committedAt) / 1000;
  const { rows } = await db.query(`SELECT count(*) FILTER (WHERE status = 'succeeded')::int AS ok FROM callback WHERE batch_id = $1`, [batchId]);
  if (rows[0].ok !== n) throw new Error(`expected ${n} succeeded, got ${rows[0].ok}`);
  return { perSecond: n / seconds, cpuUs: ((processCpuMs(pid) - cpu) * 1000) / n };
}

async function scenario(server) {
  const url = await freshDatabase(server, 'bench_transform');
  const receiver = await BenchReceiver.start();
  const service = await startService(url, dispatchEnv(WINDOW));
  const db = await connect(url);
  try {
    const keyId = await benchKeyId(db);
    await putReceiver(service.url, 'plain', { url: `${receiver.url()}/hook` });
    await putReceiver(service.url, 'shaped', { url: `${receiver.url()}/hook`, transform: { code: SMALL } });
    const { rows } = await db.query(`SELECT name, id FROM receiver WHERE name IN ('plain', 'shaped')`);
    const ids = Object.fromEntries(rows.map((r) => [r.name, r.id]));
    // warm both paths (and start the sandbox's thread) before anything is measured
    const warm = Math.min(2_000, N);
    await drain(db, receiver, keyId, ids.plain, warm, service.pid);
    await drain(db, receiver, keyId, ids.shaped, warm, service.pid);

    const plain = [];
    const shaped = [];
    for (let round = 0; round < ROUNDS; round++) {
      plain.push(await drain(db, receiver, keyId, ids.plain, N, service.pid));
      shaped.push(await drain(db, receiver, keyId, ids.shaped, N, service.pid));
    }
    const plainRate = median(plain.map((r) => r.perSecond));
    const shapedRate = median(shaped.map((r) => r.perSecond));
    const rounds = ROUNDS > 1 ? `, medians of ${ROUNDS} turns each` : '';

    // Memory: K receivers, each with its own small transform, one callback each (compiled once, kept cached).
    const before = service.memory().rssMb;
    for (let i = 0; i < TRANSFORMS; i++) await putReceiver(service.url, `m-${i}`, { url: `${receiver.url()}/m`, transform: { code: `${SMALL}\n// ${i}` } });
    const { rows: mids } = await db.query(`SELECT id FROM receiver WHERE name LIKE 'm-%'`);
    for (const { id } of mids) await drain(db, receiver, keyId, id, 1, service.pid);
    const after = service.memory().rssMb;

    return [
      row(`drain of ${N.toLocaleString('en-US')} due callbacks through a small transform (window ${WINDOW}${rounds})`, shapedRate, 'calls/s', {
        baseline: plainRate,
      }),
      row('  same, as a share of the drain without a transform', shapedRate / plainRate, '×', { target: 0.8 }),
      row('  service CPU per call without a transform', median(plain.map((r) => r.cpuUs)), 'µs', { higherIsBetter: false }),
      row('  service CPU per call with the transform (all threads: the sandbox too)', median(shaped.map((r) => r.cpuUs)), 'µs', { higherIsBetter: false }),
      row(`sandbox memory per cached transform (service RSS over ${TRANSFORMS} transforms compiled and run)`, ((after - before) * 1024) / TRANSFORMS, 'KiB', {
        higherIsBetter: false,
      }),
    ];
  } finally {
    await db.end();
    await service.stop();
    await receiver.close();
  }
}

await main(scenario);
