import { afterAll, describe, expect, it } from 'vitest';
import { WorkerService } from '../../src/dispatch/worker.service.js';
import { HealthController } from '../../src/health/health.controller.js';
import { connect, createTestDatabase } from '../support/database.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { sharedService, startTestService, waitFor, type TestService } from '../support/service.js';

type Ready = { status?: string; code?: string; checks?: Record<string, { ok: boolean }>; details?: Record<string, { ok: boolean; detail?: string }> };

describe(HealthController.name, () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });
  // One service per role for the file, started by the first test that needs it: a worker
  // (the second of its tests stops its loop, so it runs last on it) and an API-role one
  // (the test that deletes a migration puts it back).
  const worker = sharedService({ dispatchPollMs: 100 });
  const api = sharedService({ role: 'api' });
  const workerService = worker.get;
  const apiService = api.get;
  cleanups.push(worker.dispose, api.dispose);

  /**
   * The 200 of /health/ready: a worker is ready once it has made its first round trip to
   * the database, which a loaded machine (or a JIT-compiling server) may not have done as
   * the port opens.
   */
  const readyAnswer = (service: TestService) =>
    waitFor(async () => {
      const r = await service.api('/health/ready', { key: null });
      return r.status === 200 ? r : undefined;
    }, 10_000);

  it('should be live and ready with every check passing on a working service', async () => {
    const service = await workerService();
    expect((await service.apiJson('/health/live', { key: null })).status).toBe('ok');
    const res = await readyAnswer(service);
    expect(await res.json()).toEqual({ status: 'ok', checks: { database: { ok: true }, migrations: { ok: true }, worker: { ok: true } } });
  });

  it('should answer 503 naming the worker when the worker loop stops', async () => {
    const service = await workerService();
    await readyAnswer(service);
    // The loop stops as on SIGTERM; the API keeps answering.
    await service.app.get(WorkerService).onModuleDestroy();
    const body = await waitFor(
      async () => {
        const res = await service.api('/health/ready', { key: null });
        return res.status === 503 ? ((await res.json()) as Ready) : undefined;
      },
      5000,
      100,
    );
    expect(body.code).toBe('not_ready');
    expect(body.details?.worker).toMatchObject({ ok: false, detail: expect.stringMatching(/no successful claim/) });
    expect(body.details?.database).toEqual({ ok: true });
    expect((await service.api('/health/live', { key: null })).status).toBe(200);
  });

  it('should answer 503 naming a migration the database has not applied', async () => {
    const service = await apiService();
    const db = await connect(service.databaseUrl);
    const deleted: Array<Record<string, unknown>> = [];
    try {
      const { rows } = await db.query(
        `DELETE FROM "_prisma_migrations" WHERE migration_name = (SELECT max(migration_name) FROM "_prisma_migrations") RETURNING *`,
      );
      deleted.push(...rows);
      const res = await service.api('/health/ready', { key: null });
      expect(res.status).toBe(503);
      const body = (await res.json()) as Ready;
      expect(body.details?.migrations).toEqual({ ok: false, detail: `not applied: ${rows[0].migration_name}` });
      expect(body.details?.database).toEqual({ ok: true });
    } finally {
      // applied again, as it was: the file's API-role service serves the next test
      for (const row of deleted) await db.query(`INSERT INTO "_prisma_migrations" SELECT * FROM json_populate_record(NULL::"_prisma_migrations", $1)`, [row]);
      await db.end();
    }
  });

  it('should not check the worker in the API role', async () => {
    const service = await apiService();
    expect((await service.api('/health/ready', { key: null })).status).toBe(200);
    expect(((await service.apiJson('/health/ready', { key: null })) as Ready).checks).toEqual({ database: { ok: true }, migrations: { ok: true } });
  });

  it('should answer 503 naming the database when Postgres goes away, and stay live', async () => {
    // Postgres behind a proxy that then resets every connection, open or new: the server gone, as the service sees it
    const database = await createTestDatabase();
    const target = new URL(database.directUrl);
    const proxy = await FaultProxy.start({ host: target.hostname, port: Number(target.port) });
    cleanups.push(database.drop, () => proxy.close());
    const service = await startTestService({ dispatchPollMs: 100 }, proxy.urlFor(database.directUrl));
    cleanups.push(service.stop);
    // ready first (its worker's first claim can come a moment after the start on a loaded machine)
    await waitFor(async () => (await service.api('/health/ready', { key: null })).status === 200, 10_000, 100);

    proxy.set({ kind: 'reset' });
    const started = Date.now();
    const res = await service.api('/health/ready', { key: null });
    expect(res.status).toBe(503);
    expect(Date.now() - started).toBeLessThan(3000);
    const body = (await res.json()) as Ready;
    expect(body.code).toBe('not_ready');
    expect(body.details?.database?.ok).toBe(false);
    expect(body.details?.database?.detail).toMatch(/\w/);
    expect((await service.api('/health/live', { key: null })).status).toBe(200);
  });
});
