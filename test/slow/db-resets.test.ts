import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, useTestDatabase } from '../support/database.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { call, type ServiceProcess, workerBehindProxy as startWorkerBehindProxy } from '../support/process.js';
import { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/service.js';

/**
 * Chaos between the workers and Postgres: a TCP proxy of the test's own in front of
 * each worker (test/support/fault-proxy.ts) resets every connection every 250 ms
 * while two workers send 3,000 callbacks.
 */
describe('workers whose Postgres connections are reset under load', () => {
  const t = useTestDatabase();
  const processes: ServiceProcess[] = [];
  const proxies: FaultProxy[] = [];
  let receiver: Receiver;
  const POLL_MS = 200;
  /** LEADER_LOCK_TIMEOUT_MS of these workers: the lock's session ends 3 s after its last statement. */
  const LOCK_TIMEOUT_MS = 3000;

  beforeAll(async () => {
    receiver = await Receiver.start({ host: '127.0.0.74' });
  });
  afterAll(async () => {
    for (const p of processes) p.kill('SIGKILL');
    for (const p of proxies) await p.close();
    await receiver?.close();
  });

  const workerBehindProxy = (host: string) =>
    startWorkerBehindProxy(t.directUrl, host, { pollMs: POLL_MS, lockTimeoutMs: LOCK_TIMEOUT_MS }, { proxies, processes });

  it(
    'should lose no callback and send none more often than its attempts say when connections are reset during claims and write-backs',
    { timeout: 180_000 },
    async () => {
      const w1 = await workerBehindProxy('127.0.0.75');
      const w2 = await workerBehindProxy('127.0.0.76');
      const n = 3000;
      const res = await call(w1.worker.url, '/v1/batches', {
        method: 'POST',
        json: { callbacks: Array.from({ length: n }, (_, i) => ({ url: `${receiver.url}/reset?i=${i}`, body: '{}', timeoutMs: 1000, maxAttempts: 20 })) },
      });
      expect(res.status).toBe(202);
      const ids: string[] = res.body.callbacks.map((c: { id: string }) => c.id);
      // resets every 250 ms on both workers' connections while they send
      for (let i = 0; i < 12; i++) {
        await new Promise((r) => setTimeout(r, 200));
        for (const p of [w1.proxy, w2.proxy]) p.set({ kind: 'reset' });
        await new Promise((r) => setTimeout(r, 50));
        for (const p of [w1.proxy, w2.proxy]) p.set({ kind: 'pass' });
      }
      expect(w1.proxy.resets + w2.proxy.resets).toBeGreaterThan(20);
      const db = await connect(t.url);
      try {
        const rows = await waitFor(
          async () => {
            const { rows } = await db.query<{ id: string; status: string; attempts: number }>(
              `SELECT id, status, attempts FROM callback WHERE id = ANY($1::uuid[])`,
              [ids],
            );
            return rows.every((r) => r.status === 'succeeded') ? rows : undefined;
          },
          120_000,
          500,
        );
        const delivered = new Map<string, number>();
        for (const r of receiver.requests) {
          const id = String(r.headers['webhook-id']);
          delivered.set(id, (delivered.get(id) ?? 0) + 1);
        }
        let duplicates = 0;
        for (const r of rows) {
          const times = delivered.get(r.id) ?? 0;
          expect(times, `callback ${r.id} never arrived`).toBeGreaterThanOrEqual(1);
          // every delivery is an attempt the service counted (a resend follows a lost write-back, whose attempt was counted)
          expect(times, `callback ${r.id}: ${times} deliveries, ${r.attempts} attempts`).toBeLessThanOrEqual(r.attempts);
          duplicates += times - 1;
        }
        console.log(`resets: ${w1.proxy.resets + w2.proxy.resets}; ${n} callbacks, ${duplicates} delivered twice or more (at-least-once)`);
      } finally {
        await db.end();
      }
      await w1.worker.stop();
      await w2.worker.stop();
    },
  );
});
