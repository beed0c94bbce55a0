import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WorkerService } from '../../src/dispatch/worker.service.js';
import { connect, createTestDatabase } from '../support/database.js';
import { call, spawnService, type ServiceProcess } from '../support/process.js';
import { Receiver } from '../support/receiver.js';
import { waitFor, waitForLockWaiter } from '../support/service.js';

/** Real processes: started, killed with SIGKILL or stopped with SIGTERM, started again. */
describe(`${WorkerService.name} across process crashes`, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: pg.Client;
  let receiver: Receiver;
  const running: ServiceProcess[] = [];

  const start = async (env: Record<string, string> = {}) => {
    const p = await spawnService({ DATABASE_URL: database.url, DISPATCH_POLL_MS: '100', ...env });
    running.push(p);
    return p;
  };
  const statuses = async () =>
    Object.fromEntries((await db.query('SELECT status, count(*)::int AS n FROM callback GROUP BY status')).rows.map((r) => [r.status, r.n]));

  beforeAll(async () => {
    database = await createTestDatabase();
    db = await connect(database.url);
    receiver = await Receiver.start();
  });
  afterEach(async () => {
    for (const p of running.splice(0)) {
      p.kill('SIGKILL');
      await p.exited;
    }
    await db.query('DELETE FROM callback; DELETE FROM batch');
    receiver.requests.length = 0;
  });
  afterAll(async () => {
    await db?.end();
    await receiver?.close();
    await database?.drop();
  });

  it('should send callbacks stored while no worker ran once a worker starts (pending rows survive a restart)', async () => {
    const api = await start({ ROLE: 'api' });
    const { status, body } = await call(api.url, '/v1/batches', {
      method: 'POST',
      json: { callbacks: Array.from({ length: 10 }, () => ({ url: `${receiver.url}/x` })) },
    });
    expect(status).toBe(202);
    api.kill('SIGTERM');
    expect(await api.exited).toBe(0);
    expect(await statuses()).toEqual({ pending: 10 });
    expect(receiver.requests).toHaveLength(0);

    const worker = await start();
    await waitFor(async () => (await statuses()).succeeded === 10, 15_000).catch((e) => {
      throw new Error(`${e.message}\n${worker.output()}`);
    });
    expect(new Set(receiver.requests.map((r) => r.headers['webhook-id']))).toEqual(new Set(body.callbacks.map((c: { id: string }) => c.id)));
  });

  it('should lose nothing when a worker is killed with SIGKILL mid-batch; only calls in flight at the crash are sent twice', async () => {
    // A per-host cap above the window: a rolling window of 20, calls always in flight.
    // At the cap (20, the default) the worker sends in waves of 20, and a kill between
    // two waves would catch none in flight.
    const lease = { DISPATCH_LEASE_MARGIN_MS: '1000', DISPATCH_CONCURRENCY: '20', HOST_MAX_IN_FLIGHT: '1000' };
    const first = await start(lease);
    const n = 200;
    const { body } = await call(first.url, '/v1/batches', {
      method: 'POST',
      json: { callbacks: Array.from({ length: n }, () => ({ url: `${receiver.url}/work?sleep=100`, timeoutMs: 1000 })) },
    });
    await waitFor(() => receiver.requests.length >= 60, 10_000, 5);
    first.kill('SIGKILL');
    await first.exited;
    const atCrash = await statuses();
    expect(atCrash.succeeded ?? 0).toBeLessThan(n);

    await start(lease);
    await waitFor(async () => (await statuses()).succeeded === n, 30_000);

    const ids: string[] = body.callbacks.map((c: { id: string }) => c.id);
    const seen = new Map<string, number>();
    for (const r of receiver.requests) seen.set(String(r.headers['webhook-id']), (seen.get(String(r.headers['webhook-id'])) ?? 0) + 1);
    expect(new Set(seen.keys())).toEqual(new Set(ids));
    const twice = [...seen.values()].filter((c) => c > 1);
    // In flight (window 20) or finished but not yet written back at the kill.
    expect(twice.length).toBeLessThanOrEqual(40);
    expect(Math.max(...seen.values())).toBe(2);
    // Every callback has exactly one recorded attempt, the one that landed.
    const attempts = (await db.query('SELECT callback_id, count(*)::int AS n FROM attempt GROUP BY callback_id')).rows;
    expect(attempts).toHaveLength(n);
    expect(attempts.every((a) => a.n === 1)).toBe(true);
  });

  it('should drain on SIGTERM: finish calls in flight, hand back the rest, exit 0', async () => {
    const worker = await start({ DISPATCH_CONCURRENCY: '5', HOST_MAX_IN_FLIGHT: '5', SHUTDOWN_GRACE_MS: '5000' });
    const { body } = await call(worker.url, '/v1/batches', {
      method: 'POST',
      json: { callbacks: Array.from({ length: 30 }, () => ({ url: `${receiver.url}/slow?sleep=400` })) },
    });
    // a full window at the receiver, none answered yet: calls in flight at the SIGTERM
    await waitFor(() => receiver.active >= 5 || undefined, 10_000, 5);
    worker.kill('SIGTERM');
    const stoppedAt = Date.now();
    expect(await worker.exited).toBe(0);
    expect(Date.now() - stoppedAt).toBeLessThan(3000);

    const afterStop = await statuses();
    expect(afterStop.in_flight ?? 0).toBe(0);
    expect(afterStop.succeeded).toBeGreaterThanOrEqual(5);
    expect(afterStop.succeeded + afterStop.pending).toBe(30);
    expect((await db.query(`SELECT count(*)::int AS n FROM callback WHERE lease_owner IS NOT NULL`)).rows[0].n).toBe(0);
    expect(receiver.requests).toHaveLength(afterStop.succeeded);

    await start();
    await waitFor(async () => (await statuses()).succeeded === 30, 15_000);
    const perId = new Map<string, number>();
    for (const r of receiver.requests) perId.set(String(r.headers['webhook-id']), (perId.get(String(r.headers['webhook-id'])) ?? 0) + 1);
    expect(perId.size).toBe(30);
    expect([...perId.values()].every((c) => c === 1)).toBe(true);
    expect(new Set(perId.keys())).toEqual(new Set(body.callbacks.map((c: { id: string }) => c.id)));
  });

  it('should stop within SHUTDOWN_GRACE_MS on SIGTERM when a receiver never answers, handing that call back', async () => {
    const worker = await start({ SHUTDOWN_GRACE_MS: '500' });
    receiver.maxActive = 0;
    const { body } = await call(worker.url, '/v1/batches', {
      method: 'POST',
      json: { callbacks: [{ url: `${receiver.url}/stuck?hang=1`, timeoutMs: 30_000 }] },
    });
    await waitFor(() => receiver.maxActive >= 1, 10_000, 10); // the call is at the receiver
    worker.kill('SIGTERM');
    const stoppedAt = Date.now();
    expect(await worker.exited).toBe(0);
    // The grace period, the write-back and closing the database; not the call's own 30 s timeout.
    expect(Date.now() - stoppedAt).toBeLessThan(5000);
    const { rows } = await db.query('SELECT status, attempts, lease_owner FROM callback WHERE id = $1', [body.callbacks[0].id]);
    expect(rows, worker.output()).toEqual([{ status: 'pending', attempts: 0, lease_owner: null }]);
    expect((await db.query('SELECT count(*)::int AS n FROM attempt')).rows[0].n).toBe(0);
  });

  it('should exit SHUTDOWN_OVERRUN_MS past SHUTDOWN_GRACE_MS when the database does not answer at SIGTERM, losing nothing', async () => {
    // No lock_timeout: the lock below stands for a database that does not answer (with one, the claim gives up after it).
    const worker = await start({ SHUTDOWN_GRACE_MS: '200', SHUTDOWN_OVERRUN_MS: '2000', DATABASE_LOCK_TIMEOUT_MS: '0' });
    const runAt = new Date(Date.now() + 1500).toISOString();
    const { body } = await call(worker.url, '/v1/batches', { method: 'POST', json: { callbacks: [{ url: `${receiver.url}/x`, runAt }] } });
    const locker = await connect(database.url);
    try {
      // Claims update callback rows, so they wait behind this lock; reads do not.
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE callback IN SHARE MODE');
      await waitForLockWaiter(db, 'UPDATE callback');
      worker.kill('SIGTERM');
      const stoppedAt = Date.now();
      expect(await worker.exited).toBe(1);
      expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(2200);
      expect(Date.now() - stoppedAt).toBeLessThan(5200);
      expect(worker.output()).toContain('shutdown not done after 2200 ms');
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    // The claim may still land once the lock is gone (its worker is gone too): the
    // row is then leased to nobody alive and goes back to pending when the lease expires.
    const { rows } = await db.query('SELECT status FROM callback WHERE id = $1', [body.callbacks[0].id]);
    expect(['pending', 'in_flight']).toContain(rows[0]?.status);
  });

  it('should hand back what a claim under way at SIGTERM takes, leaving no row claimed', async () => {
    const worker = await start({ SHUTDOWN_GRACE_MS: '300', DISPATCH_CONCURRENCY: '10' });
    for (let round = 0; round < 3; round++) {
      // The NOTIFY of each batch wakes a claim; the signal lands while claims run.
      await call(worker.url, '/v1/batches', {
        method: 'POST',
        json: { callbacks: Array.from({ length: 300 }, () => ({ url: `${receiver.url}/stuck?hang=1`, timeoutMs: 30_000 })) },
      });
    }
    worker.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    const left = await db.query(`SELECT status, lease_owner IS NULL AS unleased, count(*)::int AS n FROM callback GROUP BY 1, 2`);
    expect(left.rows, worker.output()).toEqual([{ status: 'pending', unleased: true, n: 900 }]);
  });
});
