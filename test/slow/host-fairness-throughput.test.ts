import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkerService } from '../../src/dispatch/worker.service.js';
import { connect } from '../support/database.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService, jsonOf } from '../support/service.js';

const WINDOW = 50;
const CAP = 20;
/** Callbacks of one measured run to the fast host, and how long each holds its slot. */
const FAST_CALLS = 600;
const FAST_MS = 50;
/** How long the slow host holds a call: longer than a measured run, so it stays saturated through one. */
const SLOW_MS = 5000;
const PAIRS = 3;

/**
 * One slow host never slows the others: host A (127.0.0.2) answers after 5 s, host B
 * (127.0.0.3) after 50 ms. B's throughput with A saturated (its cap in flight and a
 * backlog of due rows behind it) must stay ≥ 90% of B alone, and A never holds more
 * than its cap of the window.
 *
 * Runs alone and with the slow host alternate, best of three each: at its cap the fast
 * host's rate is its calls' 50 ms plus the write-back and claim round trip, which a busy
 * neighbour on a shared machine moves by ±20% from one 2 s run to the next, and drifts
 * over a minute. Measured back to back (three alone, then three with), a drift alone
 * once read as 73% (CI, 2026-12-01).
 */
describe(WorkerService.name, () => {
  let service: TestService;
  let db: pg.Client;
  let slow: Receiver;
  let fast: Receiver;

  beforeAll(async () => {
    service = await startTestService({ dispatchConcurrency: WINDOW, hostMaxInFlight: CAP, shutdownGraceMs: 300 });
    db = await connect(service.databaseUrl);
    slow = await Receiver.start({ host: '127.0.0.2' });
    fast = await Receiver.start({ host: '127.0.0.3' });
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
    await slow?.close();
    await fast?.close();
  });

  async function sendBatch(url: string, n: number, query = '', extra: Record<string, unknown> = {}): Promise<{ id: string; callbacks: Array<{ id: string }> }> {
    const callbacks = Array.from({ length: n }, (_, i) => ({ url: `${url}/${i}${query}`, ...extra }));
    const res = await service.api('/v1/batches', { method: 'POST', json: { callbacks } });
    expect(res.status).toBe(202);
    return jsonOf(res);
  }

  let slowInFlight = 0;

  /** Waits for a batch, sampling the slow host's in-flight count as it goes. */
  async function waitDone(batchId: string, timeoutMs = 30_000): Promise<void> {
    await waitFor(
      async () => {
        const { rows } = await db.query('SELECT coalesce(max(in_flight), 0)::int AS n FROM host WHERE host = $1', [slow.url]);
        slowInFlight = Math.max(slowInFlight, rows[0].n);
        return (await service.apiJson(`/v1/batches/${batchId}`)).status === 'completed';
      },
      timeoutMs,
      20,
    );
  }

  /** One batch of FAST_CALLS to the fast host; its callbacks per second, first attempt start to last attempt end. */
  async function run(label: string): Promise<number> {
    const { id } = await sendBatch(`${fast.url}/${label}`, FAST_CALLS, `?sleep=${FAST_MS}`);
    await waitDone(id);
    const { rows } = await db.query(
      `SELECT count(*)::int AS n,
              extract(epoch FROM max(a.started_at + a.duration_ms * interval '1 millisecond') - min(a.started_at)) AS span
       FROM attempt a JOIN callback c ON c.id = a.callback_id WHERE c.batch_id = $1 AND a.outcome = 'success'`,
      [id],
    );
    expect(rows[0].n).toBe(FAST_CALLS);
    return rows[0].n / Number(rows[0].span);
  }

  /** A run while the slow host holds its cap and has twice that due behind it; the backlog is cancelled after. */
  async function runWithSlow(label: string): Promise<number> {
    const answeredBefore = slow.requests.length;
    const wave = await sendBatch(`${slow.url}/${label}`, 3 * CAP, `?sleep=${SLOW_MS}`, { timeoutMs: 2 * SLOW_MS, maxAttempts: 1 });
    await waitFor(() => slow.maxActive >= CAP, 5000, 10);
    const rate = await run(label);
    // The slow host stayed saturated throughout: none of its calls had been answered yet.
    expect(slow.requests.length).toBe(answeredBefore);
    for (const c of wave.callbacks) {
      const res = await service.api(`/v1/callbacks/${c.id}/cancel`, { method: 'POST' });
      expect([200, 409]).toContain(res.status); // 409: one of the CAP in flight
    }
    await waitFor(() => slow.requests.length === answeredBefore + CAP, 2 * SLOW_MS, 20);
    await waitDone(wave.id);
    return rate;
  }

  it('should keep a fast host at ≥ 90% of its throughput while a 5 s host holds only its cap of the window', async () => {
    // Warm to steady state first (JIT, pools), so the first measured run is not the cold one.
    await run('warm');
    const alone: number[] = [];
    const withSlow: number[] = [];
    for (let i = 1; i <= PAIRS; i++) {
      alone.push(await run(`alone-${i}`));
      withSlow.push(await runWithSlow(`with-slow-${i}`));
    }
    const best = (xs: number[]) => Math.max(...xs);
    const ratio = best(withSlow) / best(alone);
    console.log(
      `slow host: fast host alone ${alone.map((r) => r.toFixed(0)).join('/')} callbacks/s, with a 5 s host holding ` +
        `${slowInFlight}/${WINDOW} of the window ${withSlow.map((r) => r.toFixed(0)).join('/')} callbacks/s (best ${(100 * ratio).toFixed(1)}%)`,
    );
    expect(slow.maxActive).toBe(CAP);
    expect(slowInFlight).toBe(CAP);
    expect(ratio).toBeGreaterThanOrEqual(0.9);
  });
});
