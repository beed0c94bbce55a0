// Fan-out: events published over HTTP to an API-only service (ROLE=api, so no
// dispatching shares its CPU) by a key with 10,000 receivers, whose types are taken by
// 1, 10 or 1,000 of them. Figures are ingest to stored: the 202 comes after the event
// and all its deliveries are committed. Baseline for one event to 1,000 receivers: the
// same 1,000 callbacks sent as one batch naming the receivers (POST /v1/batches), same
// run; for events taken by one receiver: one-callback batches naming it. The stored
// callbacks are counted against the deliveries the answers reported.
// Not here yet: the drain of the deliveries against bench:peer's rate.
//   node bench/fanout.bench.mjs
import { Pool } from 'undici';
import { BENCH_KEY, connect, freshDatabase, main, percentile, row, startService } from './lib/harness.mjs';
import { benchKeyId } from './lib/seed.mjs';

const RECEIVERS = 10_000;
const FANOUTS = [1, 10, 1000];
/** Publishes of the 1,000-receiver type timed one at a time (and as many batches for the baseline). */
const TIMED = Number(process.env.BENCH_FANOUT_TIMED ?? 100);
const auth = { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/json' };
const payload = (i) => ({ orderId: `o-${i}`, amount: 1500, currency: 'EUR', lines: [{ sku: 'A-1', qty: 2 }] });

/** Receivers r1..r10000 straight into Postgres; r1 takes every fan type, r1..r10 the 10 and 1,000 ones, r1..r1000 the 1,000 one, the rest a type of their own each. */
async function seedReceivers(db) {
  const keyId = await benchKeyId(db);
  await db.query(
    `INSERT INTO receiver (id, api_key_id, name, url, event_types)
     SELECT gen_random_uuid(), $1, 'r' || i, 'http://127.0.0.1:9/r' || i,
            CASE WHEN i = 1 THEN ARRAY['fan.1', 'fan.10', 'fan.1000'] WHEN i <= 10 THEN ARRAY['fan.10', 'fan.1000']
                 WHEN i <= 1000 THEN ARRAY['fan.1000'] ELSE ARRAY['other.t' || i] END
     FROM generate_series(1, ${RECEIVERS}) i`,
    [keyId],
  );
  await db.query('ANALYZE receiver');
  await db.query('ANALYZE event_subscription');
}

/** POSTs `body(i)` to `path` from `connections` connections, `total` in all; every answer a 202. Per-request ms and the sum of `count(answer)`. */
async function post(url, { path, connections, total, body, count = () => 0 }) {
  const pool = new Pool(url, { connections, pipelining: 1 });
  const times = [];
  let next = 0;
  let counted = 0;
  const t0 = performance.now();
  try {
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (next < total) {
          const i = next++;
          const started = performance.now();
          const res = await pool.request({ path, method: 'POST', headers: auth, body: JSON.stringify(body(i)) });
          const text = await res.body.text();
          times.push(performance.now() - started);
          if (res.statusCode !== 202) throw new Error(`${path} answered ${res.statusCode}: ${text.slice(0, 300)}`);
          counted += count(JSON.parse(text));
        }
      }),
    );
  } finally {
    await pool.close();
  }
  return { times, counted, seconds: (performance.now() - t0) / 1000 };
}

export async function fanoutScenario(databaseUrl) {
  const service = await startService(databaseUrl, { ROLE: 'api', MAX_PENDING_PER_KEY: '0' });
  const db = await connect(databaseUrl);
  try {
    await seedReceivers(db);
    for (const n of FANOUTS) {
      const res = await fetch(`${service.url}/v1/event-types/fan.${n}`, { method: 'PUT', headers: auth, body: '{}' });
      if (res.status !== 201) throw new Error(`PUT event type answered ${res.status}`);
    }
    const event = (n) => (i) => ({ type: `fan.${n}`, payload: payload(i) });
    const batchOf1000 = (i) => ({ callbacks: Array.from({ length: 1000 }, (_, r) => ({ receiver: `r${r + 1}`, body: payload(i) })) });
    const deliveries = (answer) => answer.deliveries;
    // warm-up: each path a few times
    for (const n of FANOUTS) await post(service.url, { path: '/v1/events', connections: 2, total: 20, body: event(n) });
    await post(service.url, { path: '/v1/batches', connections: 2, total: 10, body: batchOf1000 });

    const before = Number((await db.query('SELECT count(*) FROM callback')).rows[0].count);
    let expected = 0;
    // one at a time, alternated, so both see the same machine
    const eventMs = [];
    const batchMs = [];
    for (let round = 0; round < 5; round++) {
      const e = await post(service.url, { path: '/v1/events', connections: 1, total: TIMED / 5, body: event(1000), count: deliveries });
      const b = await post(service.url, { path: '/v1/batches', connections: 1, total: TIMED / 5, body: batchOf1000 });
      eventMs.push(...e.times);
      batchMs.push(...b.times);
      expected += e.counted + (TIMED / 5) * 1000;
    }
    const rates = [];
    for (const n of FANOUTS) {
      const total = n === 1000 ? 100 : 2000;
      const r = await post(service.url, { path: '/v1/events', connections: 4, total, body: event(n), count: deliveries });
      if (r.counted !== total * n) throw new Error(`fan.${n}: ${r.counted} deliveries reported, expected ${total * n}`);
      expected += r.counted;
      rates.push({ n, events: total / r.seconds, deliveries: r.counted / r.seconds });
    }
    // baseline of the one-receiver rate: one-callback batches naming that receiver, same connections
    const singles = await post(service.url, {
      path: '/v1/batches',
      connections: 4,
      total: 2000,
      body: (i) => ({ callbacks: [{ receiver: 'r1', body: payload(i) }] }),
    });
    expected += 2000;
    const stored = Number((await db.query('SELECT count(*) FROM callback')).rows[0].count) - before;
    if (stored !== expected) throw new Error(`stored ${stored} callbacks, expected ${expected}`);
    return [
      row(
        `fan-out: one event to 1,000 of 10,000 receivers, 202 after stored, p99 of ${TIMED} (one connection, ROLE=api; baseline: the same 1,000 callbacks as one batch naming the receivers)`,
        percentile(eventMs, 99),
        'ms',
        { baseline: percentile(batchMs, 99), target: 50, higherIsBetter: false },
      ),
      row('fan-out: the same, p50', percentile(eventMs, 50), 'ms', { baseline: percentile(batchMs, 50), higherIsBetter: false }),
      ...rates.flatMap(({ n, events: perSecond, deliveries: perSecondDelivered }) => [
        row(
          `fan-out: events of a type taken by ${n.toLocaleString('en-US')} receiver${n > 1 ? 's' : ''} (4 connections${n === 1 ? '; baseline: one-callback batches naming that receiver' : ''})`,
          perSecond,
          'events/s',
          { baseline: n === 1 ? 2000 / singles.seconds : null },
        ),
        ...(n > 1 ? [row(`fan-out: their deliveries stored`, perSecondDelivered, 'callbacks/s')] : []),
      ]),
    ];
  } finally {
    await db.end();
    await service.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(async (server) => fanoutScenario(await freshDatabase(server, 'bench_fanout')));
}
