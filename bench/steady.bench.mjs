// The whole job held for minutes (issue: months of traffic): first the peak, then an
// open-loop load at half of it with retention on a short window, until the stored
// history levels off.
//
// 1. Peak: BENCH_PEAK_N callbacks posted in batches of 500 (4 requests at a time) to one
//    service (API and worker, default settings) on a fresh database; callbacks/s from the
//    first post until the last is stored as done.
// 2. Steady: a fresh database, the same service with RETENTION_HOURS = the window
//    (BENCH_WINDOW_S, 180 s). Batches of 500 posted at a fixed pace (BENCH_LOAD of the
//    peak, 0.5; or BENCH_STEADY_RATE callbacks/s), whatever the service answers, for BENCH_STEADY_S (480 s). Every 30 s it
//    prints stored callbacks and attempts, the due backlog, pick-up p50/p99 (first
//    attempt's start after the callback was stored) and the rates sent and done.
//
// It holds when (each a row with its target):
//  - stored callbacks level off: the last third's mean within 15% of the middle third's,
//    and never over 2x what the window holds (rate x window);
//  - the due backlog stays under 2 s of load;
//  - pick-up p99 of the last minute stays within 2x the first minute's.
// And what the steady phase cost: CPU of the service process (API and worker) and of
// Postgres (all its processes), µs per callback the receiver answered meanwhile.
//
//   npm run bench:steady                 (embedded 18)
//   DATABASE_URL=postgresql://… npm run bench:steady    (a stock server)
import { setTimeout as sleep } from 'node:timers/promises';
import { postgresCpuMs, processCpuMs } from './lib/cpu.mjs';
import { BENCH_KEY, backendPidOf, connect, freshDatabase, main, row, startService, waitUntil } from './lib/harness.mjs';
import { BenchReceiver } from './lib/receiver.mjs';

const PEAK_N = Number(process.env.BENCH_PEAK_N ?? 20_000);
const LOAD = Number(process.env.BENCH_LOAD ?? 0.5);
/** A fixed steady load, callbacks/s, instead of BENCH_LOAD of the peak: so runs of two builds on a shared machine offer the same load. */
const FIXED_RATE = process.env.BENCH_STEADY_RATE ? Number(process.env.BENCH_STEADY_RATE) : null;
const WINDOW_S = Number(process.env.BENCH_WINDOW_S ?? 180);
const STEADY_S = Number(process.env.BENCH_STEADY_S ?? 480);
const SAMPLE_S = Number(process.env.BENCH_SAMPLE_S ?? 30);
const PER_BATCH = 500;
/** Requests in flight the open loop allows before it counts a post as late (it still sends it). */
const MAX_OUTSTANDING = 64;
const HOSTS = Array.from({ length: 50 }, (_, i) => `127.0.13.${i + 1}`);

function batchBody(receiver, seq) {
  const callbacks = Array.from({ length: PER_BATCH }, (_, k) => ({
    url: `${receiver.url(HOSTS[(seq * PER_BATCH + k) % HOSTS.length])}/hook`,
    body: { event: 'steady', n: seq * PER_BATCH + k },
  }));
  return JSON.stringify({ callbacks });
}

async function post(api, body) {
  const res = await fetch(`${api.url}/v1/batches`, {
    method: 'POST',
    headers: { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/json' },
    body,
  });
  const text = await res.text();
  if (res.status !== 202) throw new Error(`ingest answered ${res.status}: ${text}`);
}

const open = async (db) => (await db.query(`SELECT count(*)::int AS n FROM callback WHERE status IN ('pending', 'in_flight')`)).rows[0].n;

/** Callbacks/s of the whole job at full speed: posting PEAK_N, 4 batches at a time, until all are done. */
async function peak(server, receiver) {
  const url = await freshDatabase(server, 'bench_steady_peak');
  const service = await startService(url, { RETENTION_HOURS: '0' });
  const db = await connect(url);
  try {
    // warm-up turn, not counted
    await Promise.all([0, 1, 2, 3].map((i) => post(service, batchBody(receiver, i))));
    await waitUntil(async () => (await open(db)) === 0, 60_000, 20);
    const before = (await receiver.stats()).count;
    const started = performance.now();
    const batches = PEAK_N / PER_BATCH;
    let next = 0;
    await Promise.all(
      [0, 1, 2, 3].map(async () => {
        while (next < batches) await post(service, batchBody(receiver, next++));
      }),
    );
    await receiver.waitForCount(before + PEAK_N, 300_000);
    await waitUntil(async () => (await open(db)) === 0, 120_000, 10);
    return PEAK_N / ((performance.now() - started) / 1000);
  } finally {
    await db.end();
    await service.stop();
  }
}

/** One sample of the stored history and the work of the last `sinceS` seconds. */
async function sample(db, sinceS) {
  const { rows } = await db.query(
    `SELECT (SELECT count(*)::int FROM callback) AS callbacks,
            (SELECT count(*)::int FROM attempt) AS attempts,
            (SELECT count(*)::int FROM callback WHERE status = 'pending' AND next_attempt_at <= now()) AS due,
            (SELECT count(*)::int FROM callback WHERE status IN ('succeeded', 'failed', 'cancelled') AND completed_at > now() - $1::float8 * interval '1 second') AS done`,
    [sinceS],
  );
  return rows[0];
}

/** Pick-up (first attempt's start minus the callback's creation), ms, p50 and p99, of first attempts started between two instants. */
async function pickUp(db, from, to) {
  // A hash join over the sample's attempts, and a time limit: with a new partition's
  // statistics not yet gathered, a nested loop once ran for minutes, and its snapshot
  // held up the service's DETACH … CONCURRENTLY all that time (the bench disturbing
  // what it measures).
  await db.query('BEGIN');
  await db.query("SET LOCAL enable_nestloop = off; SET LOCAL statement_timeout = '20s'");
  const { rows } = await db
    .query(
      `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50, percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) AS p99, count(*)::int AS n
     FROM (SELECT extract(epoch FROM a.started_at - c.created_at) * 1000 AS ms
           FROM attempt a JOIN callback c ON c.id = a.callback_id
           -- a callback finishes after its first attempt started: done_at >= $1 prunes the older
           -- history partitions (without it, Postgres 15 read all of them for minutes a sample)
           WHERE a.number = 1 AND a.started_at >= $1 AND a.started_at < $2 AND c.done_at >= $1) s`,
      [from, to],
    )
    .finally(() => db.query('COMMIT'));
  return { p50: Number(rows[0].p50), p99: Number(rows[0].p99), n: rows[0].n };
}

const mean = (xs) => xs.reduce((s, x) => s + x, 0) / xs.length;

export async function steadyScenario(server) {
  const receiver = await BenchReceiver.start({ hosts: HOSTS });
  const version = async (db) => (await db.query(`SELECT current_setting('server_version') AS v`)).rows[0].v;
  try {
    const peakRate = await peak(server, receiver);
    const rate = FIXED_RATE ?? peakRate * LOAD;
    const intervalMs = (PER_BATCH / rate) * 1000;
    const windowRows = rate * WINDOW_S;
    console.log(
      `peak ${Math.round(peakRate)}/s; steady load ${Math.round(rate)}/s (a batch of ${PER_BATCH} every ${Math.round(intervalMs)} ms), window ${WINDOW_S} s ≈ ${Math.round(windowRows).toLocaleString('en-US')} callbacks`,
    );

    const url = await freshDatabase(server, 'bench_steady');
    const service = await startService(url, { RETENTION_HOURS: String(WINDOW_S / 3600) });
    const db = await connect(url);
    const serverVersion = await version(db);
    const backendPid = await backendPidOf(db);
    const cpu = async () => ({ service: processCpuMs(service.pid), postgres: postgresCpuMs(backendPid), sent: (await receiver.stats()).count });
    let cpuStart;
    let cpuEnd;
    const samples = [];
    let outstanding = 0;
    let late = 0;
    let failed = null;
    const posts = new Set();
    try {
      cpuStart = await cpu();
      const t0 = Date.now();
      const end = t0 + STEADY_S * 1000;
      const sampler = (async () => {
        let sentBefore = (await receiver.stats()).count;
        for (let at = t0 + SAMPLE_S * 1000; at <= end; at += SAMPLE_S * 1000) {
          await sleep(at - Date.now());
          const s = await sample(db, SAMPLE_S);
          const sent = (await receiver.stats()).count;
          const p = await pickUp(db, new Date(at - SAMPLE_S * 1000), new Date(at));
          const sentPerS = (sent - sentBefore) / SAMPLE_S;
          sentBefore = sent;
          samples.push({ t: (at - t0) / 1000, ...s, sentPerS, p50: p.p50, p99: p.p99 });
          console.log(
            `${String((at - t0) / 1000).padStart(4)} s  stored ${s.callbacks.toLocaleString('en-US')} callbacks, ${s.attempts.toLocaleString('en-US')} attempts; due ${s.due}; pick-up p50 ${p.p50.toFixed(0)} ms p99 ${p.p99.toFixed(0)} ms; sent ${Math.round(sentPerS)}/s, done ${Math.round(s.done / SAMPLE_S)}/s`,
          );
        }
      })();
      for (let seq = 0; ; seq++) {
        const at = t0 + seq * intervalMs;
        if (at >= end || failed) break;
        await sleep(Math.max(0, at - Date.now()));
        if (outstanding >= MAX_OUTSTANDING) late++;
        outstanding++;
        const p = post(service, batchBody(receiver, seq))
          .catch((e) => (failed ??= e))
          .finally(() => {
            outstanding--;
            posts.delete(p);
          });
        posts.add(p);
      }
      await Promise.all(posts);
      await sampler;
      cpuEnd = await cpu();
      if (failed) throw failed;
    } finally {
      await db.end();
      await service.stop();
    }

    const third = Math.floor(samples.length / 3);
    const middle = mean(samples.slice(third, 2 * third).map((s) => s.callbacks));
    const last = mean(samples.slice(2 * third).map((s) => s.callbacks));
    const maxStored = Math.max(...samples.map((s) => s.callbacks));
    const maxDue = Math.max(...samples.map((s) => s.due));
    const perMinute = Math.max(1, Math.round(60 / SAMPLE_S));
    const firstP99 = Math.max(...samples.slice(0, perMinute).map((s) => s.p99));
    const lastP99 = Math.max(...samples.slice(-perMinute).map((s) => s.p99));
    const sent = mean(samples.slice(1).map((s) => s.sentPerS));
    const label = `${serverVersion}, ${STEADY_S} s at ${FIXED_RATE ? `${FIXED_RATE}/s` : `${LOAD} of the peak`}, window ${WINDOW_S} s`;
    const steadySent = cpuEnd.sent - cpuStart.sent;
    const perCallbackUs = (k) => ((cpuEnd[k] - cpuStart[k]) * 1000) / steadySent;
    return [
      row(`steady: peak whole job, same run (${PEAK_N.toLocaleString('en-US')} callbacks, ${serverVersion})`, peakRate, 'callbacks/s'),
      row(`steady: sent per second after the first sample (${label}); baseline: the offered load`, sent, 'callbacks/s', {
        baseline: rate,
        target: rate * 0.95,
      }),
      row(`steady: stored callbacks, last third's mean; baseline: the middle third's (${late} posts late)`, last, 'rows', {
        baseline: middle,
        target: middle * 1.15,
        higherIsBetter: false,
      }),
      row(`steady: stored callbacks at most; baseline: what the window holds (rate × ${WINDOW_S} s)`, maxStored, 'rows', {
        baseline: windowRows,
        target: 2 * windowRows,
        higherIsBetter: false,
      }),
      row('steady: due backlog at most; baseline: 1 s of load', maxDue, 'callbacks', { baseline: rate, target: 2 * rate, higherIsBetter: false }),
      row(`steady: pick-up p99, last minute; baseline: the first minute's`, lastP99, 'ms', { baseline: firstP99, target: 2 * firstP99, higherIsBetter: false }),
      row(
        `steady: service process CPU (API and worker) per callback over the steady phase (${steadySent.toLocaleString('en-US')} sent)`,
        perCallbackUs('service'),
        'µs',
      ),
      row('steady: Postgres CPU (all its processes) per callback over the steady phase', perCallbackUs('postgres'), 'µs'),
    ];
  } finally {
    await receiver.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(async (server) => steadyScenario(server));
}
