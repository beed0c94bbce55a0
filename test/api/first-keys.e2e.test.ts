import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyService } from '../../src/auth/api-key.service.js';
import { connect, createTestDatabase, type TestDatabase } from '../support/database.js';
import { spawnService } from '../support/process.js';
import { startTestService, TEST_KEY, type TestService } from '../support/service.js';

const OTHER_KEY = 'cbk_another_bootstrap_key_0123456789';

const status = async (url: string, key: string) => (await fetch(`${url}/v1/batches`, { headers: { authorization: `Bearer ${key}` } })).status;

/**
 * BOOTSTRAP_API_KEY is created only in a database without keys. A start that does not
 * add it says so, loudly (a warning naming why, and the banner); a bootstrap key that
 * was revoked stays revoked, and the start goes on. The starts whose banner is checked
 * are processes (main.ts prints it) of the API role: the first key is made at start by
 * every role but the worker, and the API alone starts in less.
 */
describe(`${ApiKeyService.name}: BOOTSTRAP_API_KEY at start`, () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
    // The first start on the empty database creates TEST_KEY (its BOOTSTRAP_API_KEY), in this process: the
    // banner it prints then ("the BOOTSTRAP_API_KEY you set (admin)") is logging.e2e.test.ts's.
    const first = await startTestService({ role: 'api' }, db.url);
    expect(first.firstKey.created).toBeDefined();
    expect(await status(first.url, TEST_KEY)).toBe(200);
    await first.stop();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('should warn, naming why, when BOOTSTRAP_API_KEY is set beside existing keys and not added', async () => {
    const second = await spawnService({ DATABASE_URL: db.url, BOOTSTRAP_API_KEY: OTHER_KEY, ROLE: 'api' }, 60_000);
    try {
      const warning = second
        .output()
        .split('\n')
        .find((l) => l.includes('BOOTSTRAP_API_KEY is set but was NOT added'));
      expect(warning, second.output()).toBeDefined();
      expect(JSON.parse(warning!)).toMatchObject({ level: 'warn' });
      expect(warning).toMatch(/this one has 1 active key\(s\).*npx callbacks keys create <name> --admin --local/);
      expect(warning).not.toContain(OTHER_KEY);
      expect(second.output()).toMatch(/API key: {3}BOOTSTRAP_API_KEY was NOT added: this database has keys already/);
      expect(await status(second.url, OTHER_KEY)).toBe(401);
      expect(await status(second.url, TEST_KEY)).toBe(200);
    } finally {
      await second.stop();
    }
  });

  it('should start, keep a revoked BOOTSTRAP_API_KEY revoked and say so, when every key is revoked', async () => {
    // Every key revoked, the bootstrap key included (the API refuses the last admin key now; a database may hold this from before).
    const client = await connect(db.url);
    await client.query('UPDATE api_key SET revoked_at = now() WHERE revoked_at IS NULL');
    await client.end();
    const third = await spawnService({ DATABASE_URL: db.url, ROLE: 'api' }, 60_000);
    try {
      const warning = third
        .output()
        .split('\n')
        .find((l) => l.includes('BOOTSTRAP_API_KEY is key'));
      expect(warning, third.output()).toBeDefined();
      expect(JSON.parse(warning!)).toMatchObject({ level: 'warn' });
      expect(JSON.parse(warning!).msg).toMatch(/^BOOTSTRAP_API_KEY is key [0-9a-f-]{36} "bootstrap", revoked at .*: it stays revoked and is not added again/);
      expect(third.output()).toMatch(/API key: {3}BOOTSTRAP_API_KEY is revoked and stays revoked/);
      expect(third.output()).not.toContain(TEST_KEY);
      expect(await status(third.url, TEST_KEY)).toBe(401);
      expect((await fetch(`${third.url}/health/ready`)).status).toBe(200);
    } finally {
      await third.stop();
    }
  });
});

/** The last active admin key cannot be revoked: nobody could make or revoke keys through the API without one. */
describe(`${ApiKeyService.name}: the last admin key`, () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ role: 'api' });
  });
  afterAll(async () => {
    await service?.dispose();
  });

  const keyId = async (key: string) => {
    const { items } = await service.apiJson('/v1/keys');
    return (items as Array<{ id: string; prefix: string; revokedAt: string | null }>).find((k) => key.startsWith(k.prefix) && !k.revokedAt)!.id;
  };

  it('should refuse to revoke the last active admin key with a 409 that says what to do', async () => {
    const plain = await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'plain' } });
    expect((await service.api(`/v1/keys/${plain.id}`, { method: 'DELETE' })).status).toBe(200);

    const res = await service.api(`/v1/keys/${await keyId(TEST_KEY)}`, { method: 'DELETE' });
    expect(res.status).toBe(409);
    const body = (await res.json()) as { code: string; message: string };
    expect(body.code).toBe('conflict');
    expect(body.message).toMatch(/last active admin key: it cannot be revoked\. Create another admin key first/);
    expect(await status(service.url, TEST_KEY)).toBe(200);
  });

  it('should revoke an admin key once another is active, and of two revoked at once keep one', async () => {
    const second = await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'second admin', admin: true } });
    const third = await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'third admin', admin: true } });
    expect((await service.api(`/v1/keys/${second.id}`, { method: 'DELETE', key: third.key })).status).toBe(200);

    // TEST_KEY and the third: each revoked by the other at the same moment.
    const [a, b] = await Promise.all([
      service.api(`/v1/keys/${await keyId(TEST_KEY)}`, { method: 'DELETE', key: third.key }),
      service.api(`/v1/keys/${third.id}`, { method: 'DELETE', key: TEST_KEY }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    const { items } = await service.apiJson('/v1/keys', { key: a.status === 200 ? third.key : TEST_KEY });
    expect((items as Array<{ isAdmin: boolean; revokedAt: string | null }>).filter((k) => k.isAdmin && !k.revokedAt)).toHaveLength(1);
  });
});
