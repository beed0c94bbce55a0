// Who goes next, measured as a user would see it (the scheduling issue's targets):
// - a small tenant's 10 callbacks under another tenant's flood of 40,000 over 100 fast
//   receivers: how long after its 202 the last one arrives (baseline: the same 10 on
//   the idle service), and the flooding tenant's drain rate beside it (baseline: its
//   rate alone, same run);
// - 20 high-priority callbacks posted behind 6,000 low ones of the same key (60
//   receivers): how long after their 202 the last one arrives (baseline: idle), with
//   one service, then with an API process and three worker processes;
// - ordering: 20 ordering keys × 40 callbacks, receivers answering 503 to every fifth
//   first try, three worker processes, one killed with SIGKILL midway: ordering
//   violations (a callback sent before the one ahead of it finished) at the receiver.
//   node bench/fairness.bench.mjs
import { BenchReceiver } from './lib/receiver.mjs';
import { BENCH_KEY, connect, freshDatabase, main, row, startService, waitUntil } from './lib/harness.mjs';

const FLOOD = 40_000;

async function api(base, path, { key = BENCH_KEY, method = 'GET', json } = {}) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(json ? { 'content-type': 'application/json' } : {}) },
    body: json ? JSON.stringify(json) : undefined,
  });
  const body = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

/** Posts callbacks in batches of 10,000; resolves with their ids and the time of the last 202. */
async function post(base, key, callbacks, defaults) {
  const ids = [];
  for (let i = 0; i < callbacks.length; i += 10_000) {
    const body = await api(base, '/v1/batches', { key, method: 'POST', json: { callbacks: callbacks.slice(i, i + 10_000), defaults } });
    ids.push(...body.callbacks.map((c) => c.id));
  }
  return { ids, at: performance.timeOrigin + performance.now() };
}

const hosts = (n, third) => Array.from({ length: n }, (_, i) => `127.0.${third}.${i + 1}`);

/** Epoch ms when the last of `ids` arrived at `receiver` (its records are consumed). */
async function lastArrival(receiver, ids, timeoutMs = 60_000) {
  const want = new Set(ids);
  let last = 0;
  await waitUntil(
    async () => {
      const r = await receiver.records();
      r.ids.forEach((id, i) => {
        if (want.delete(id)) last = Math.max(last, r.arrived[i]);
      });
      return want.size === 0;
    },
    timeoutMs,
    5,
  );
  return last;
}

/**
 * Tenant B's 10 callbacks on the idle service, then under tenant A's flood of 40,000 on
 * 100 hosts: ms from B's 202 to its last arrival, each time, and A's drain rate beside
 * B. `alone`: A's flood also drains alone before and after (its rate: their mean).
 */
export async function tenantUnderFlood(databaseUrl, { alone: withAlone = true } = {}) {
  const flood = await BenchReceiver.start({ hosts: hosts(100, 1) });
  const small = await BenchReceiver.start({ hosts: ['127.0.2.1'], record: true });
  const service = await startService(databaseUrl);
  try {
    const a = (await api(service.url, '/v1/keys', { method: 'POST', json: { name: 'tenant-a', allowPrivateNetworks: true } })).key;
    const b = (await api(service.url, '/v1/keys', { method: 'POST', json: { name: 'tenant-b', allowPrivateNetworks: true } })).key;
    const floodCallbacks = Array.from({ length: FLOOD }, (_, i) => ({ url: `${flood.urls[i % 100]}/a/${i}` }));
    const smallCallbacks = Array.from({ length: 10 }, (_, i) => ({ url: `${small.url()}/b/${i}` }));
    // Warm, then B alone on the idle service.
    await post(service.url, a, floodCallbacks.slice(0, 2000));
    await flood.waitForCount(2000, 60_000);
    const idle = await post(service.url, b, smallCallbacks);
    const idleMs = (await lastArrival(small, idle.ids)) - idle.at;

    const drain = async (withB) => {
      await flood.reset();
      const t0 = performance.now();
      await post(service.url, a, floodCallbacks);
      let bMs = null;
      if (withB) {
        await flood.waitForCount(5000, 60_000);
        const sent = await post(service.url, b, smallCallbacks);
        bMs = (await lastArrival(small, sent.ids)) - sent.at;
      }
      await flood.waitForCount(FLOOD, 120_000);
      return { rate: FLOOD / ((performance.now() - t0) / 1000), bMs };
    };
    if (!withAlone) return { idleMs, ...(await drain(true)), aloneRate: null };
    // A alone before and after, so the machine's drift lands on both sides of the ratio.
    const alone = [await drain(false), await drain(true), await drain(false)];
    const beside = alone.splice(1, 1)[0];
    return { idleMs, ...beside, aloneRate: (alone[0].rate + alone[1].rate) / 2 };
  } finally {
    await service.stop();
    await flood.close();
    await small.close();
  }
}

async function tenantScenario(server) {
  const { idleMs, bMs, rate, aloneRate } = await tenantUnderFlood(await freshDatabase(server, 'bench_fairness_tenants'));
  return [
    row("tenant B's 10 callbacks under tenant A's flood of 40,000 (100 hosts): last arrival after B's 202 (baseline: idle service)", bMs, 'ms', {
      baseline: idleMs,
      target: 250,
      higherIsBetter: false,
    }),
    row("  tenant A's drain rate with B beside it (baseline: A alone, before and after, same run)", rate, 'calls/s', { baseline: aloneRate }),
    row('  same, as a share of A alone', rate / aloneRate, '×', { target: 0.9 }),
  ];
}

/** One service (all roles), or an API process and `workers` worker processes, started one after the other. */
async function services(databaseUrl, workers) {
  if (workers === 1) {
    const service = await startService(databaseUrl);
    return { url: service.url, stop: () => service.stop() };
  }
  const all = [await startService(databaseUrl, { ROLE: 'api' })];
  const stop = () => Promise.all(all.map((s) => s.stop()));
  try {
    for (let i = 0; i < workers; i++) all.push(await startService(databaseUrl, { ROLE: 'worker' }));
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: all[0].url, stop };
}

async function priorityScenario(server, workers) {
  const databaseUrl = await freshDatabase(server, 'bench_fairness_priority');
  const receiver = await BenchReceiver.start({ hosts: hosts(60, 3), record: true });
  const service = await services(databaseUrl, workers);
  try {
    const at = (i) => `${receiver.urls[i % 60]}/p/${i}`;
    const high = Array.from({ length: 20 }, (_, i) => ({ url: at(i) }));
    await post(service.url, BENCH_KEY, high, { priority: 'high' }); // warm
    await receiver.waitForCount(20, 30_000);
    await receiver.records();
    const idle = await post(service.url, BENCH_KEY, high, { priority: 'high' });
    const idleMs = (await lastArrival(receiver, idle.ids)) - idle.at;
    await receiver.reset();
    await post(
      service.url,
      BENCH_KEY,
      Array.from({ length: 6000 }, (_, i) => ({ url: at(i) })),
      { priority: 'low' },
    );
    await receiver.waitForCount(300, 30_000);
    const urgent = await post(service.url, BENCH_KEY, high, { priority: 'high' });
    const ms = (await lastArrival(receiver, urgent.ids)) - urgent.at;
    await receiver.waitForCount(6020, 60_000);
    return [
      row(
        `20 high callbacks behind 6,000 low ones of the same key (60 hosts), ${workers === 1 ? 'one service' : `${workers} worker processes`}: last arrival after their 202 (baseline: idle service)`,
        ms,
        'ms',
        {
          baseline: idleMs,
          target: 250,
          higherIsBetter: false,
        },
      ),
    ];
  } finally {
    await service.stop();
    await receiver.close();
  }
}

async function orderingScenario(server) {
  const databaseUrl = await freshDatabase(server, 'bench_fairness_ordering');
  const receiver = await BenchReceiver.start({ hosts: hosts(4, 4), record: true });
  const env = { DISPATCH_POLL_MS: '100', RETRY_DELAYS_MS: '50', RETRY_JITTER_PERMILLE: '0', DISPATCH_LEASE_MARGIN_MS: '1000' };
  const apiService = await startService(databaseUrl, { ...env, ROLE: 'api' });
  const workers = [];
  for (let i = 0; i < 3; i++) workers.push(await startService(databaseUrl, { ...env, ROLE: 'worker', DISPATCH_CONCURRENCY: '20', PORT: '0' }));
  const db = await connect(databaseUrl);
  try {
    const keys = 20;
    const perKey = 40;
    const accepted = Array.from({ length: keys }, () => []);
    for (let b = 0; b < 2; b++) {
      const callbacks = Array.from({ length: (keys * perKey) / 2 }, (_, i) => ({
        url: `${receiver.urls[i % 4]}/o/${b}/${i}?sleep=10${i % 5 === 0 ? '&failFirst=1' : ''}`,
        orderingKey: `key-${i % keys}`,
        timeoutMs: 1000,
      }));
      const { ids } = await post(apiService.url, BENCH_KEY, callbacks);
      ids.forEach((id, i) => accepted[i % keys].push(id));
    }
    await receiver.waitForCount((keys * perKey) / 3, 60_000);
    process.kill(workers[0].pid, 'SIGKILL');
    await waitUntil(
      async () => (await db.query(`SELECT count(*)::int AS n FROM callback WHERE status = 'succeeded'`)).rows[0].n === keys * perKey,
      120_000,
      200,
    );
    const r = await receiver.records();
    const requests = r.ids.map((id, i) => ({ id, start: r.arrived[i], end: r.arrived[i] + r.handled[i] }));
    let violations = 0;
    for (const ids of accepted) {
      for (let i = 1; i < ids.length; i++) {
        const before = requests.filter((q) => q.id === ids[i - 1]);
        const next = requests.filter((q) => q.id === ids[i]);
        if (next.length === 0 || Math.min(...next.map((q) => q.start)) < Math.max(...before.map((q) => q.end)) - 1) violations++;
      }
    }
    return [
      row(
        'ordering: 20 keys × 40 callbacks, 503s on first tries, 3 workers, one killed with SIGKILL: callbacks sent before the one ahead finished',
        violations,
        '',
        { target: 0, higherIsBetter: false },
      ),
    ];
  } finally {
    await db.end();
    for (const w of workers.slice(1)) await w.stop(); // the first was killed
    await apiService.stop();
    await receiver.close();
  }
}

export async function fairnessScenario(server) {
  return [
    ...(await tenantScenario(server)),
    ...(await priorityScenario(server, 1)),
    ...(await priorityScenario(server, 3)),
    ...(await orderingScenario(server)),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(fairnessScenario);
}
