import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkerService } from '../../src/dispatch/worker.service.js';
import { connect, createTestDatabase } from '../support/database.js';
import { call, spawnService, type ServiceProcess } from '../support/process.js';
import { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/service.js';

/** One API process and three worker processes against one Postgres. */
describe(`${WorkerService.name} scaled out`, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: pg.Client;
  const receivers: Receiver[] = [];
  const procs: ServiceProcess[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    db = await connect(database.url);
    for (const host of ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5']) receivers.push(await Receiver.start({ host }));
  });
  afterAll(async () => {
    for (const p of procs) {
      p.kill('SIGKILL');
      await p.exited;
    }
    await db?.end();
    for (const r of receivers) await r.close();
    await database?.drop();
  });

  it('should deliver 20,000 callbacks exactly once with three workers, counted at the receivers by webhook-id', async () => {
    const env = { DATABASE_URL: database.url, DISPATCH_POLL_MS: '200', LOG_LEVEL: 'error' };
    const api = await spawnService({ ...env, ROLE: 'api' });
    procs.push(api);
    for (let i = 0; i < 3; i++) procs.push(await spawnService({ ...env, ROLE: 'worker', DISPATCH_CONCURRENCY: '100', HOST_MAX_IN_FLIGHT: '100' }));

    const ids: string[] = [];
    for (let b = 0; b < 2; b++) {
      const callbacks = Array.from({ length: 10_000 }, (_, i) => ({ url: `${receivers[i % receivers.length].url}/n/${b}/${i}` }));
      const { status, body } = await call(api.url, '/v1/batches', { method: 'POST', json: { callbacks } });
      expect(status).toBe(202);
      ids.push(...body.callbacks.map((c: { id: string }) => c.id));
    }

    const received = () => receivers.reduce((n, r) => n + r.requests.length, 0);
    const started = Date.now();
    await waitFor(
      async () => {
        const { rows } = await db.query(`SELECT count(*)::int AS n FROM callback WHERE status = 'succeeded'`);
        return rows[0].n === 20_000;
      },
      120_000,
      500,
    );
    await waitFor(() => received() >= 20_000, 5000);
    console.log(`20,000 callbacks delivered by 3 workers in ${Date.now() - started} ms`);

    const perId = new Map<string, number>();
    for (const r of receivers) for (const q of r.requests) perId.set(String(q.headers['webhook-id']), (perId.get(String(q.headers['webhook-id'])) ?? 0) + 1);
    expect(perId.size).toBe(20_000);
    expect([...perId.values()].filter((n) => n !== 1)).toEqual([]);
    expect(new Set(perId.keys())).toEqual(new Set(ids));
    expect(received()).toBe(20_000);
    // Each worker took a share.
    const workers = (await db.query('SELECT worker, count(*)::int AS n FROM attempt GROUP BY worker')).rows;
    expect(workers).toHaveLength(3);
    expect((await db.query('SELECT count(*)::int AS n FROM attempt')).rows[0].n).toBe(20_000);
  }, 240_000);
});
