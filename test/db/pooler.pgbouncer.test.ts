import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startService } from '../../src/app.factory.js';
import { loadConfig } from '../../src/config/app.config.js';
import { isTransactionPooler } from '../../src/database/database.target.js';
import { connect, createTestDatabase, type TestDatabase } from '../support/database.js';
import { startPgBouncer, type PgBouncer } from '../support/pgbouncer.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, TEST_KEY, TEST_SECRETS_KEY, waitFor, type TestService } from '../support/service.js';

/**
 * The service behind PgBouncer instances of this file's own, in front of the run's
 * server (npm run test:pgbouncer; needs /usr/sbin/pgbouncer): how it tells a
 * transaction pooler from a session, what it refuses, and a pooler that goes away.
 */
// Below Linux's ephemeral range, as in test/slow/database-outage.test.ts: a port the service
// keeps connecting to while nothing listens must not become its own source port.
const PORT = 20_000 + (Number(process.env.TEST_PG_PORT ?? 54339) % 10_000) + 40;

describe('behind PgBouncer', () => {
  let database: TestDatabase;
  const poolers: PgBouncer[] = [];
  const pooler = async (options: Parameters<typeof startPgBouncer>[1] = {}) => {
    const p = await startPgBouncer(inject('pgAdminUrl'), options);
    poolers.push(p);
    return p;
  };

  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    for (const p of poolers) await p.stop();
    await database?.drop();
  });

  it('should tell a transaction pooler from a session-mode pooler and a direct connection', async () => {
    expect(await isTransactionPooler((await pooler()).url(database.name))).toBe(true);
    expect(await isTransactionPooler((await pooler({ poolMode: 'session' })).url(database.name))).toBe(false);
    expect(await isTransactionPooler(database.directUrl)).toBe(false);
  });

  it.each(['worker', 'api', 'all'] as const)('should refuse to start as %s on a transaction pooler alone, naming DATABASE_DIRECT_URL', async (role) => {
    const url = (await pooler()).url(database.name);
    const config = loadConfig({}, { port: 0, databaseUrl: url, role, logLevel: 'error', bootstrapApiKey: TEST_KEY, secretsKey: TEST_SECRETS_KEY });
    await expect(startService(config)).rejects.toThrow(/transaction pooler.*set DATABASE_DIRECT_URL/s);
  });

  it('should refuse a DATABASE_DIRECT_URL that is a transaction pooler too (the same one written another way), naming it', async () => {
    const url = (await pooler()).url(database.name);
    const samePooler = `${url}${url.includes('?') ? '&' : '?'}application_name=direct`;
    expect(samePooler).not.toBe(url);
    const config = loadConfig(
      {},
      { port: 0, databaseUrl: url, databaseDirectUrl: samePooler, role: 'worker', logLevel: 'error', bootstrapApiKey: TEST_KEY, secretsKey: TEST_SECRETS_KEY },
    );
    await expect(startService(config)).rejects.toThrow(/DATABASE_DIRECT_URL goes through a transaction pooler/);
    const same = loadConfig(
      {},
      { port: 0, databaseUrl: url, databaseDirectUrl: url, role: 'worker', logLevel: 'error', bootstrapApiKey: TEST_KEY, secretsKey: TEST_SECRETS_KEY },
    );
    await expect(startService(same)).rejects.toThrow(/DATABASE_URL, and DATABASE_DIRECT_URL the same, goes through a transaction pooler/);
  });

  it('should start through a session-mode pooler alone, as through a direct URL', async () => {
    const url = (await pooler({ poolMode: 'session' })).url(database.name);
    const service = await startTestService({ databaseDirectUrl: undefined }, url);
    try {
      expect((await service.api('/health/ready', { key: null })).status).toBe(200);
    } finally {
      await service.stop();
    }
  });

  describe('when the pooler goes away', () => {
    let bouncer: PgBouncer;
    let service: TestService;
    let receiver: Receiver;
    let db: Awaited<ReturnType<typeof connect>>;

    beforeAll(async () => {
      bouncer = await startPgBouncer(inject('pgAdminUrl'), { port: PORT });
      service = await startTestService({ dispatchPollMs: 200, databaseDirectUrl: database.directUrl }, bouncer.url(database.name));
      receiver = await Receiver.start();
      db = await connect(database.directUrl);
    });
    afterAll(async () => {
      await service?.stop().catch(() => undefined);
      await bouncer?.stop();
      await receiver?.close();
      await db?.end();
    });

    it('should answer 503 while it is away and deliver every callback once it is back', { timeout: 90_000 }, async () => {
      const ready = async () => (await service.api('/health/ready', { key: null })).status;
      expect(await ready()).toBe(200);
      const n = 400;
      const res = await service.api('/v1/batches', {
        method: 'POST',
        json: { callbacks: Array.from({ length: n }, (_, i) => ({ url: `${receiver.url}/slow?sleep=${20 + (i % 5) * 10}`, timeoutMs: 5000 })) },
      });
      expect(res.status).toBe(202);
      const ids: string[] = ((await res.json()) as { callbacks: Array<{ id: string }> }).callbacks.map((c) => c.id);
      await waitFor(() => receiver.requests.length >= 50 || undefined, 10_000, 5);
      await bouncer.stop();

      await waitFor(async () => (await ready()) === 503, 15_000, 100);
      const during = await service.api('/v1/batches', { method: 'POST', json: { callbacks: [{ url: `${receiver.url}/x` }] } });
      expect(during.status).toBe(503);
      await new Promise((r) => setTimeout(r, 1000));

      bouncer = await startPgBouncer(inject('pgAdminUrl'), { port: PORT });
      await waitFor(async () => (await ready()) === 200, 30_000, 200);
      const done = async () => (await db.query(`SELECT count(*)::int AS n FROM callback WHERE status = 'succeeded'`)).rows[0].n as number;
      await waitFor(async () => (await done()) === n, 45_000, 200);

      // Nothing lost: every callback arrived (at least once, same webhook-id) and has exactly one recorded attempt.
      const seen = new Set(receiver.requests.map((r) => String(r.headers['webhook-id'])));
      expect(ids.every((id) => seen.has(id))).toBe(true);
      expect((await db.query('SELECT count(*)::int AS n FROM callback')).rows[0].n).toBe(n);
      const attempts = (await db.query('SELECT count(DISTINCT callback_id)::int AS c, count(*)::int AS n FROM attempt')).rows[0];
      expect(attempts.c).toBe(n);
    });
  });
});
