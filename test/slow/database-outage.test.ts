import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/database/embedded-postgres.js';
import { WorkerService } from '../../src/dispatch/worker.service.js';
import { Receiver } from '../support/receiver.js';
import { TEST_SERVER_SETTINGS } from '../support/server-settings.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';

/** A Postgres server of this file's own, stopped and started under a running service. */
// Below Linux's ephemeral range (32768–60999): while Postgres is down the service
// keeps connecting to this port, and a connect to a port in that range with nothing
// listening can be given that very port as its source and connect to itself,
// holding the port so that Postgres cannot listen on it again.
const PORT = 20_000 + (Number(process.env.TEST_PG_PORT ?? 54339) % 10_000) + 20;
const DIR = `.data/test-outage-${PORT}`;

describe(`${WorkerService.name} when Postgres goes away`, () => {
  let server: EmbeddedDatabase;
  let service: TestService;
  let receiver: Receiver;

  const count = async (sql: string) => {
    const c = new pg.Client({ connectionString: server.url });
    await c.connect();
    try {
      return (await c.query(sql)).rows[0].n as number;
    } finally {
      await c.end();
    }
  };

  beforeAll(async () => {
    server = await startEmbeddedPostgres(DIR, PORT, undefined, undefined, TEST_SERVER_SETTINGS);
    const c = new pg.Client({ connectionString: server.url });
    await c.connect();
    await c.query('DROP SCHEMA public CASCADE; CREATE SCHEMA public');
    await c.end();
    service = await startTestService({ dispatchPollMs: 200 }, server.url);
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    await service?.stop().catch(() => undefined);
    await receiver?.close();
    await server?.stop();
  });

  it('should report not ready, keep outcomes, and carry on without losing or duplicating rows once Postgres is back', async () => {
    const ready = async () => (await service.api('/health/ready', { key: null })).status;
    expect(await ready()).toBe(200);

    // Calls in flight while the database goes down: their outcomes must be written once it is back.
    const res = await service.api('/v1/batches', {
      method: 'POST',
      json: { callbacks: Array.from({ length: 20 }, (_, i) => ({ url: `${receiver.url}/slow?sleep=${1500 + i * 10}`, timeoutMs: 5000 })) },
    });
    expect(res.status).toBe(202);
    const first = (await res.json()) as { callbacks: Array<{ id: string }> };
    // every call of the batch at the receiver, none answered yet: in flight when the database goes down
    await waitFor(() => receiver.active === 20 || undefined, 5000, 5);
    await server.stop();
    expect(receiver.requests.length, 'calls answered before the database was down').toBeLessThan(20);

    const during = await service.api('/v1/batches', { method: 'POST', json: { callbacks: [{ url: `${receiver.url}/x` }] } });
    expect(during.status).toBe(503);
    expect(await during.json()).toMatchObject({ code: 'not_ready' });
    await waitFor(async () => (await ready()) === 503, 10_000, 100);
    // the calls answered while it is down: their outcomes wait in the worker for the database
    await waitFor(() => receiver.requests.length === 20 || undefined, 10_000, 20);

    server = await startEmbeddedPostgres(DIR, PORT, undefined, undefined, TEST_SERVER_SETTINGS);
    await waitFor(async () => (await ready()) === 200, 20_000, 200);

    const after = await service.api('/v1/batches', {
      method: 'POST',
      json: { callbacks: Array.from({ length: 5 }, () => ({ url: `${receiver.url}/after` })) },
    });
    expect(after.status).toBe(202);
    const second = (await after.json()) as { callbacks: Array<{ id: string }> };

    await waitFor(async () => (await count(`SELECT count(*)::int AS n FROM callback WHERE status = 'succeeded'`)) === 25, 30_000, 200);
    expect(await count('SELECT count(*)::int AS n FROM callback')).toBe(25);
    expect(await count('SELECT count(*)::int AS n FROM attempt')).toBe(25);
    expect(await count('SELECT count(*)::int AS n FROM batch')).toBe(2);
    const ids = [...first.callbacks, ...second.callbacks].map((c: { id: string }) => c.id);
    const perId = new Map<string, number>();
    for (const r of receiver.requests) perId.set(String(r.headers['webhook-id']), (perId.get(String(r.headers['webhook-id'])) ?? 0) + 1);
    expect(new Set(perId.keys())).toEqual(new Set(ids));
    expect([...perId.values()].every((n) => n === 1)).toBe(true);
  });
});
