// Fan-out: events published over HTTP to an API-only service (ROLE=api, so no
// dispatching shares its CPU) by a key with 10,000 receivers, whose types are taken by
// 1, 10 or 1,000 of them. Figures are ingest to stored: the 202 comes after the event
// and all its deliveries are committed. Baseline for one event to 1,000 receivers: the
// same 1,000 callbacks sent as one batch naming the receivers (POST /v1/batches), same
// run; for events taken by one receiver: one-callback batches naming it. The stored
// callbacks are counted against the deliveries the answers reported.
// Then the drain (fanoutDrainScenario): the deliveries of events to 1,000 receivers on
// a real local receiver, drained by one worker, against the same number of plain
// callbacks with the same bodies (bench:peer's bodyOf) drained the same way (bench:peer's
// service side: its serviceRound), same run, alternated.
// With BENCH_STATEMENTS=1 (a server loading pg_stat_statements), each counted drain
// round of each side is also printed: its rate and CPU, and Postgres's execution time
// statement by statement, per callback, counted from a reset after its ingest.
// With BENCH_FANOUT_NAMED_HEADERS=1, the drain's callbacks naming the receivers carry
// two headers the size of an event's id and type headers (what events send beyond them).
//   node bench/fanout.bench.mjs   (BENCH_FANOUT_TIMED, BENCH_FANOUT_EVENTS, BENCH_FANOUT_DRAIN_N, BENCH_FANOUT_ROUNDS,
//                                  BENCH_FANOUT_PARTS=store,drain, BENCH_STATEMENTS, BENCH_FANOUT_NAMED_HEADERS;
//                                  BENCH_WINDOW as bench:peer)
import { randomUUID } from 'node:crypto';
import { Pool } from 'undici';
import { BENCH_KEY, backendPidOf, connect, freshDatabase, main, median, percentile, row, startService } from './lib/harness.mjs';
import { BenchReceiver } from './lib/receiver.mjs';
import { benchKeyId } from './lib/seed.mjs';
import { printStatementTable, resetStatements, startCountingStatements, statementTimes } from './lib/statements.mjs';
import { bodyOf, ingestThroughApi, serviceRound } from './peer.bench.mjs';

const RECEIVERS = 10_000;
const FANOUTS = [1, 10, 1000];
/** Publishes of the 1,000-receiver type timed one at a time (and as many batches for the baseline). */
const TIMED = Number(process.env.BENCH_FANOUT_TIMED ?? 100);
/** Events of the 1- and 10-receiver types in the rate phase (and one-callback batches); the 1,000-receiver type gets a twentieth. */
const RATE_EVENTS = Number(process.env.BENCH_FANOUT_EVENTS ?? 2000);
/** Deliveries drained a round (a multiple of DRAIN_FANOUT), and rounds of each side. */
const DRAIN_N = Number(process.env.BENCH_FANOUT_DRAIN_N ?? 20_000);
const ROUNDS = Number(process.env.BENCH_FANOUT_ROUNDS ?? 2);
const DRAIN_FANOUT = 1000;
/** The event type the drain's 1,000 receivers take. */
const DRAIN_TYPE = `drain.${DRAIN_FANOUT}`;
const PARTS = new Set((process.env.BENCH_FANOUT_PARTS ?? 'store,drain').split(','));
const STATEMENTS = process.env.BENCH_STATEMENTS === '1';
/**
 * BENCH_FANOUT_NAMED_HEADERS=1: the drain's named batches carry two headers as long as an
 * event's id and type headers (`x-webhook-*`: a batch may not set `webhook-*`), so the
 * named side differs from the deliveries only in being no event.
 */
const NAMED_HEADERS = process.env.BENCH_FANOUT_NAMED_HEADERS === '1';
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
      const total = n === 1000 ? Math.max(4, RATE_EVENTS / 20) : RATE_EVENTS;
      const r = await post(service.url, { path: '/v1/events', connections: 4, total, body: event(n), count: deliveries });
      if (r.counted !== total * n) throw new Error(`fan.${n}: ${r.counted} deliveries reported, expected ${total * n}`);
      expected += r.counted;
      rates.push({ n, events: total / r.seconds, deliveries: r.counted / r.seconds });
    }
    // baseline of the one-receiver rate: one-callback batches naming that receiver, same connections
    const singles = await post(service.url, {
      path: '/v1/batches',
      connections: 4,
      total: RATE_EVENTS,
      body: (i) => ({ callbacks: [{ receiver: 'r1', body: payload(i) }] }),
    });
    expected += RATE_EVENTS;
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
          { baseline: n === 1 ? RATE_EVENTS / singles.seconds : null },
        ),
        ...(n > 1 ? [row(`fan-out: their deliveries stored`, perSecondDelivered, 'callbacks/s')] : []),
      ]),
    ];
  } finally {
    await db.end();
    await service.stop();
  }
}

/** `n` receivers d1..dn through the API (each gets its own signing secret), taking `type`, at `url`; 8 at a time. */
async function putReceivers(api, n, type, url) {
  const pool = new Pool(api.url, { connections: 8 });
  try {
    let next = 1;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next <= n) {
          const i = next++;
          const res = await pool.request({ path: `/v1/receivers/d${i}`, method: 'PUT', headers: auth, body: JSON.stringify({ url, eventTypes: [type] }) });
          const text = await res.body.text();
          if (res.statusCode !== 201) throw new Error(`PUT receiver answered ${res.statusCode}: ${text.slice(0, 300)}`);
        }
      }),
    );
  } finally {
    await pool.close();
  }
}

/**
 * The drain of event deliveries against bench:peer's: one API (ROLE=api), one receiver
 * answering at once, 1,000 receivers (made through the API, each with its own secret)
 * at its /hook taking `drain.1000`. Each round stores `n` callbacks, then starts a
 * worker and times it from the first request to the last stored result
 * (serviceRound, bench:peer's service side: window BENCH_WINDOW, the per-host cap
 * above it), once as plain callbacks POSTed as batches (bench:peer's ingest) and once
 * as the deliveries of n / 1,000 events, and once as batches whose callbacks name
 * those receivers in turn (what events cost beyond callbacks bound to receivers), in
 * turns (the order reverses every round). A first round of 2,000 each is not counted. Every callback must succeed on
 * its one attempt (serviceRound checks).
 */
export async function fanoutDrainScenario(databaseUrl, { n = DRAIN_N, rounds = ROUNDS } = {}) {
  if (n % DRAIN_FANOUT !== 0) throw new Error(`BENCH_FANOUT_DRAIN_N must be a multiple of ${DRAIN_FANOUT}`);
  const db = await connect(databaseUrl);
  const pid = await backendPidOf(db);
  const receiver = await BenchReceiver.start();
  const api = await startService(databaseUrl, { ROLE: 'api' });
  try {
    const res = await fetch(`${api.url}/v1/event-types/${DRAIN_TYPE}`, { method: 'PUT', headers: auth, body: '{}' });
    if (res.status !== 201) throw new Error(`PUT event type answered ${res.status}`);
    await putReceivers(api, DRAIN_FANOUT, DRAIN_TYPE, `${receiver.url()}/hook`);
    const publish = (count) => async () => {
      const r = await post(api.url, {
        path: '/v1/events',
        connections: 2,
        total: count / DRAIN_FANOUT,
        body: (i) => ({ type: DRAIN_TYPE, payload: bodyOf(i) }),
        count: (answer) => answer.deliveries,
      });
      if (r.counted !== count) throw new Error(`${DRAIN_TYPE}: ${r.counted} deliveries reported, expected ${count}`);
    };
    // batches of 10,000 callbacks naming the same receivers in turn: what events add beyond the receivers themselves
    const named = (count) => async () => {
      const groupIds = NAMED_HEADERS ? Array.from({ length: count / DRAIN_FANOUT }, () => randomUUID()) : []; // one per 1,000, as an event's id
      for (let from = 0; from < count; from += 10_000) {
        const callbacks = Array.from({ length: Math.min(10_000, count - from) }, (_, k) => ({
          receiver: `d${1 + ((from + k) % DRAIN_FANOUT)}`,
          body: bodyOf(from + k),
          ...(NAMED_HEADERS ? { headers: { 'x-webhook-event-id': groupIds[Math.floor((from + k) / DRAIN_FANOUT)], 'x-webhook-event-type': DRAIN_TYPE } } : {}),
        }));
        await post(api.url, { path: '/v1/batches', connections: 1, total: 1, body: () => ({ callbacks }) });
      }
    };
    const plain = (count) => () => ingestThroughApi(api, `${receiver.url()}/hook`, count);
    const ingests = { plain, events: publish, named };
    if (STATEMENTS) await startCountingStatements(db);
    // BENCH_STATEMENTS: the drain's statements alone, from a reset once the ingest is stored
    const side = async (kind, count, round) => {
      const ingest = ingests[kind](count);
      const r = await serviceRound(databaseUrl, api, db, pid, receiver, count, {
        ingest: async () => {
          await ingest();
          if (STATEMENTS) await resetStatements(db);
        },
      });
      if (STATEMENTS && round !== undefined) {
        const cpu = `worker ${r.worker.toFixed(1)} µs, Postgres ${r.postgres.toFixed(1)} µs of CPU per callback`;
        printStatementTable(`drain round ${round + 1}, ${kind}: ${r.perSecond.toFixed(0)} callbacks/s, ${cpu}`, await statementTimes(db, count));
      }
      return r;
    };
    const kinds = ['plain', 'events', 'named'];
    for (const kind of kinds) await side(kind, 2000);
    const runs = { plain: [], events: [], named: [] };
    for (let round = 0; round < rounds; round++) {
      for (const kind of round % 2 === 0 ? kinds : [...kinds].reverse()) runs[kind].push(await side(kind, n, round));
    }
    const m = (kind, k = 'perSecond') => median(runs[kind].map((r) => r[k]));
    const size = `${n.toLocaleString('en-US')} callbacks, median of ${rounds}`;
    return [
      row(
        `fan-out drain: the deliveries of ${n / DRAIN_FANOUT} events to ${DRAIN_FANOUT.toLocaleString('en-US')} receivers, one worker, first request to the last stored result (baseline: as many plain callbacks, bench:peer's service side, same run, alternated; ${size})`,
        m('events'),
        'callbacks/s',
        { baseline: m('plain'), target: 0.9 * m('plain') },
      ),
      row('  its worker + Postgres CPU per delivery (baseline: per plain callback)', m('events', 'worker') + m('events', 'postgres'), 'µs', {
        baseline: m('plain', 'worker') + m('plain', 'postgres'),
        higherIsBetter: false,
      }),
      row('    of which the worker process', m('events', 'worker'), 'µs', { baseline: m('plain', 'worker'), higherIsBetter: false }),
      row('    of which Postgres', m('events', 'postgres'), 'µs', { baseline: m('plain', 'postgres'), higherIsBetter: false }),
      row("  the bench's receiver CPU per delivery (its process: the receiver's thread; baseline: per plain callback)", m('events', 'bench'), 'µs', {
        baseline: m('plain', 'bench'),
        higherIsBetter: false,
      }),
      row(
        `  as many callbacks of batches naming the same ${DRAIN_FANOUT.toLocaleString('en-US')} receivers in turn${NAMED_HEADERS ? ", with two headers as long as an event's id and type" : ''} (baseline: the plain callbacks)`,
        m('named'),
        'callbacks/s',
        { baseline: m('plain') },
      ),
      row('    their worker + Postgres CPU per callback (baseline: per plain callback)', m('named', 'worker') + m('named', 'postgres'), 'µs', {
        baseline: m('plain', 'worker') + m('plain', 'postgres'),
        higherIsBetter: false,
      }),
      row("    the bench's receiver CPU per callback (baseline: per plain callback)", m('named', 'bench'), 'µs', {
        baseline: m('plain', 'bench'),
        higherIsBetter: false,
      }),
    ];
  } finally {
    await db.end();
    await api.stop();
    await receiver.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(async (server) => [
    ...(PARTS.has('store') ? await fanoutScenario(await freshDatabase(server, 'bench_fanout')) : []),
    ...(PARTS.has('drain') ? await fanoutDrainScenario(await freshDatabase(server, 'bench_fanout_drain')) : []),
  ]);
}
