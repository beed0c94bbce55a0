import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CaughtErrors } from '../../src/logging/caught-errors.js';
import { connect, connectPoolerConsole } from '../support/database.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';

/** Errors the service carries on from are counted in errors_total{where}, not swallowed. */
describe(CaughtErrors.name, () => {
  let service: TestService;
  let db: pg.Client;
  let receiver: Receiver;

  beforeAll(async () => {
    service = await startTestService();
    db = await connect(service.databaseUrl);
    receiver = await Receiver.start({ host: '127.0.0.9' });
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
    await receiver?.close();
  });

  const delivered = async (path: string) => {
    const batch = await service.apiJson('/v1/batches', { method: 'POST', json: { callbacks: [{ url: `${receiver.url}/${path}` }] } });
    await waitFor(async () => (await service.apiJson(`/v1/batches/${batch.id}`)).counts.succeeded === 1, 10_000);
  };
  const errorsTotal = async (): Promise<Map<string, number>> => {
    const text = await (await service.api('/metrics', { key: null })).text();
    return new Map([...text.matchAll(/^errors_total\{where="([^"]+)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]));
  };

  /**
   * Cuts the service's idle pool connections; returns how many were cut. On the server:
   * every idle session of the database but the test's. Behind the run's PgBouncer
   * (TEST_PGBOUNCER=1) the pools hold connections to the pooler, whose own sessions on
   * the server it replaces unseen: there its console's KILL drops the database's
   * client connections (and RESUME lets new ones in).
   */
  const cutIdleConnections = async (): Promise<number> => {
    const admin = await connectPoolerConsole();
    if (!admin) {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'idle' AND backend_type = 'client backend'`,
      );
      return rows[0].n;
    }
    const name = new URL(service.databaseUrl).pathname.slice(1);
    try {
      const clients = (await admin.query<{ database: string }>('SHOW CLIENTS')).rows.filter((c) => c.database === name).length;
      await admin.query(`KILL ${name}`);
      await admin.query(`RESUME ${name}`);
      return clients;
    } finally {
      await admin.end();
    }
  };

  it('should count idle pool connections cut by the server in errors_total{where}, and go on on new ones', async () => {
    await delivered('before'); // both pools now hold idle connections
    expect(await errorsTotal()).toEqual(new Map());
    expect(await cutIdleConnections()).toBeGreaterThan(0);
    const counted = await waitFor(async () => {
      const errors = await errorsTotal();
      return (errors.get('api_pool_idle_connection') ?? 0) + (errors.get('dispatch_pool_idle_connection') ?? 0) > 0 ? errors : undefined;
    }, 5_000);
    // Others may count too: a statement that was running on a cut connection (a metrics read, a claim) failed, and says so.
    for (const n of counted.values()) expect(n).toBeGreaterThan(0);
    await delivered('after');
  });
});
