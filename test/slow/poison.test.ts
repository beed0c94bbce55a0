import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WORKER_LOST } from '../../src/dispatch/sql/lease.sql.js';
import { MaintenanceService } from '../../src/dispatch/maintenance.service.js';
import { connect, createTestDatabase } from '../support/database.js';
import { call, spawnService, type ServiceProcess } from '../support/process.js';
import { waitFor } from '../support/service.js';

/**
 * A poison callback: every time it is sent, its worker dies (here the receiver has
 * the test SIGKILL the worker that called it, and never answers). Before the lease
 * reaper counted the lost attempt, such a callback went back to pending after each
 * crash, attempts still 0, and was sent without end.
 */
/** Its attempts: each one a worker killed and a lease reaped. */
const ATTEMPTS = 2;

describe(`${MaintenanceService.name} with a callback that kills its worker`, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: pg.Client;
  let server: http.Server;
  let url = '';
  let worker: ServiceProcess | undefined;
  /** Every worker started: whichever sent the request dies (one may send it before its start resolves). */
  const workers: ServiceProcess[] = [];
  const arrivals: string[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    db = await connect(database.url);
    server = http.createServer((req) => {
      arrivals.push(String(req.headers['webhook-id']));
      for (const w of workers) w.kill('SIGKILL'); // the request stays unanswered: its worker is gone
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/poison`;
  });
  afterAll(async () => {
    for (const w of workers) w.kill('SIGKILL');
    server.closeAllConnections();
    server.close();
    await db?.end();
    await database?.drop();
  });

  it('should fail it after maxAttempts lost attempts, saying the worker was lost, and send it no more', { timeout: 120_000 }, async () => {
    const env = { DATABASE_URL: database.url, DISPATCH_POLL_MS: '100', DISPATCH_LEASE_MARGIN_MS: '1000' };
    const start = async () => {
      const w = await spawnService(env);
      workers.push(w);
      return w;
    };
    worker = await start();
    const { status, body } = await call(worker.url, '/v1/batches', { method: 'POST', json: { callbacks: [{ url, timeoutMs: 1000, maxAttempts: ATTEMPTS }] } });
    expect(status).toBe(202);
    const id: string = body.callbacks[0].id;
    const row = async () => (await db.query('SELECT status, attempts, last_error FROM callback WHERE id = $1', [id])).rows[0];

    // Each worker sends it and dies; the next one reaps the lease (1 s timeout + 1 s margin) and counts the attempt.
    for (let kill = 1; kill <= ATTEMPTS; kill++) {
      await waitFor(() => arrivals.length >= kill || undefined, 15_000, 10);
      await Promise.all(workers.map((w) => w.exited));
      workers.length = 0;
      worker = await start();
    }
    await waitFor(async () => (await row()).status === 'failed', 15_000, 50);
    expect(await row()).toEqual({ status: 'failed', attempts: ATTEMPTS, last_error: WORKER_LOST });
    expect(arrivals).toEqual([id, id]);

    // The reaper that failed it and the batch sweep agree: the batch is done, and (failed for good) it is sent no more.
    await waitFor(async () => (await db.query('SELECT completed_at FROM batch')).rows[0].completed_at, 5_000, 50);
    expect(arrivals).toHaveLength(ATTEMPTS);
    const fromApi = await call(worker.url, `/v1/callbacks/${id}`);
    expect(fromApi.body).toMatchObject({ status: 'failed', lastError: WORKER_LOST });
  });
});
