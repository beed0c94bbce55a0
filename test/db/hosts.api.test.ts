import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostController } from '../../src/hosts/host.controller.js';
import { connect } from '../support/database.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService, jsonOf } from '../support/service.js';

/** GET /v1/hosts, GET /v1/hosts/:host, PUT /v1/hosts/:host/limits: shape, who may change limits, bad input. */
describe(HostController.name, () => {
  let service: TestService;
  let db: pg.Client;
  let receiver: Receiver;
  let tenant: { id: string; key: string };
  let path: string;

  beforeAll(async () => {
    service = await startTestService({ role: 'all' });
    db = await connect(service.databaseUrl);
    receiver = await Receiver.start({ host: '127.0.0.8' });
    path = `/v1/hosts/${encodeURIComponent(receiver.url)}`;
    tenant = await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'tenant', allowPrivateNetworks: true } });
    const batch = await service.apiJson('/v1/batches', {
      method: 'POST',
      json: { callbacks: [{ url: `${receiver.url}/a?sleep=20` }, { url: `${receiver.url}/b?code=500`, maxAttempts: 1 }] },
    });
    await waitFor(async () => (await service.apiJson(`/v1/batches/${batch.id}`)).status === 'completed');
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
    await receiver?.close();
  });

  const hostRow = async () => (await db.query('SELECT max_in_flight, rate_per_sec, limits_updated_by FROM host WHERE host = $1', [receiver.url])).rows[0];

  it("should list a destination with its limits, in-flight count, queue depth, breaker and the caller's latency", async () => {
    const list = await service.apiJson('/v1/hosts');
    expect(Date.parse(list.since)).toBeLessThan(Date.now());
    const item = list.items.find((h: { host: string }) => h.host === receiver.url);
    expect(item).toMatchObject({
      limits: { maxInFlight: 20, maxInFlightIsDefault: true, ratePerSec: null },
      inFlight: 0,
      queueDepth: 0,
      breaker: { state: 'closed', consecutiveFailures: 0, openUntil: null },
      latency: { attempts: 2, errorRate: 0.5 },
      goneEndpoints: [],
    });
    expect(item.latency.p50Ms).toBeGreaterThan(0);
    expect(item.latency.p99Ms).toBeGreaterThanOrEqual(20);
    expect(await service.apiJson(path)).toEqual(item);
  });

  it('should show another key the host only once it has work there, with its own figures (GET /v1/hosts/:host a 404 until then, as for a host nobody uses)', async () => {
    expect((await service.apiJson('/v1/hosts', { key: tenant.key })).items).toEqual([]);
    const unknown = `/v1/hosts/${encodeURIComponent('http://127.0.0.9:1')}`;
    const [other, nobody] = [await service.api(path, { key: tenant.key }), await service.api(unknown, { key: tenant.key })];
    expect([other.status, nobody.status]).toEqual([404, 404]);
    const [a, b] = [await jsonOf(other), await jsonOf(nobody)];
    expect(a.message.replace(receiver.url, 'H')).toBe(b.message.replace('http://127.0.0.9:1', 'H'));
    expect((await service.api(path)).status).toBe(200);
    const batch = await service.apiJson('/v1/batches', { method: 'POST', key: tenant.key, json: { callbacks: [{ url: `${receiver.url}/t` }] } });
    await waitFor(async () => (await service.apiJson(`/v1/batches/${batch.id}`, { key: tenant.key })).status === 'completed');
    const [item] = (await service.apiJson('/v1/hosts', { key: tenant.key })).items;
    expect(item).toMatchObject({ host: receiver.url, latency: { attempts: 1, errorRate: 0 } });
    expect(await service.apiJson(path, { key: tenant.key })).toEqual(item);
  });

  it("should let only admin keys change a host's limits, and restore defaults with null", async () => {
    const denied = await service.api(`${path}/limits`, { method: 'PUT', key: tenant.key, json: { maxInFlight: 1 } });
    expect(denied.status).toBe(403);
    expect((await jsonOf(denied)).code).toBe('forbidden');
    expect(await hostRow()).toMatchObject({ max_in_flight: null, rate_per_sec: null });

    const set = await service.apiJson(`${path}/limits`, { method: 'PUT', json: { maxInFlight: 3, ratePerSec: 2.5 } });
    expect(set.limits).toMatchObject({ maxInFlight: 3, maxInFlightIsDefault: false, ratePerSec: 2.5 });
    expect(await hostRow()).toMatchObject({ max_in_flight: 3, rate_per_sec: 2.5 });
    const partial = await service.apiJson(`${path}/limits`, { method: 'PUT', json: { ratePerSec: null } });
    expect(partial.limits).toMatchObject({ maxInFlight: 3, ratePerSec: null });
    const reset = await service.apiJson(`${path}/limits`, { method: 'PUT', json: { maxInFlight: null } });
    expect(reset.limits).toMatchObject({ maxInFlight: 20, maxInFlightIsDefault: true, ratePerSec: null });
  });

  it('should set limits for a destination before any callback goes there', async () => {
    const res = await service.api(`/v1/hosts/${encodeURIComponent('https://Hooks.Example.com')}/limits`, { method: 'PUT', json: { maxInFlight: 5 } });
    expect(res.status).toBe(200);
    expect((await jsonOf(res)).host).toBe('https://hooks.example.com:443');
  });

  it.each<[string, string, unknown]>([
    ['a cap of 0', '', { maxInFlight: 0 }],
    ['a fractional cap', '', { maxInFlight: 1.5 }],
    ['a cap above 10000', '', { maxInFlight: 10_001 }],
    ['a rate of 0', '', { ratePerSec: 0 }],
    ['a rate given as text', '', { ratePerSec: 'fast' }],
    ['an unknown field', '', { maxInFlight: 2, burst: 9 }],
    ['an empty body', '', {}],
    ['a host that is not a URL', 'not-a-url', { maxInFlight: 2 }],
    ['a host with a path', 'http://127.0.0.8:1/path', { maxInFlight: 2 }],
    ['a host with credentials', 'http://u:p@127.0.0.8:1', { maxInFlight: 2 }],
    ['a non-http host', 'ftp://127.0.0.8:1', { maxInFlight: 2 }],
  ])('should refuse %s with 400 and change nothing', async (_name, host, body) => {
    const before = await hostRow();
    const target = host ? `/v1/hosts/${encodeURIComponent(host)}/limits` : `${path}/limits`;
    const res = await service.api(target, { method: 'PUT', json: body });
    expect(res.status).toBe(400);
    expect((await jsonOf(res)).code).toBe('validation_failed');
    expect(await hostRow()).toEqual(before);
  });

  it('should page hosts in name order, and list for admins the hosts in use rather than every one ever called', async () => {
    // History: destinations nothing goes to any more (no work, no limits, no recent attempts of this key).
    await db.query(`INSERT INTO host (host) SELECT 'https://old-' || i || '.example.com:443' FROM generate_series(1, 50) AS i`);
    // In use: a destination with pending rows (due tomorrow), one with a cap of its own, one with failures in a row.
    await service.apiJson('/v1/batches', {
      method: 'POST',
      json: { callbacks: [{ url: 'http://127.0.0.8:2/later', runAt: new Date(Date.now() + 86_400_000).toISOString() }] },
    });
    await db.query(`INSERT INTO host (host, max_in_flight) VALUES ('https://capped.example.com:443', 3)`);
    await db.query(`INSERT INTO host (host, consecutive_failures) VALUES ('https://failing.example.com:443', 2)`);
    try {
      const seen: string[] = [];
      let cursor: string | null = '';
      for (let pages = 0; cursor !== null && pages < 20; pages++) {
        const page = await service.apiJson(`/v1/hosts?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        expect(page.items.length).toBeLessThanOrEqual(2);
        seen.push(...page.items.map((h: { host: string }) => h.host));
        cursor = page.nextCursor;
      }
      expect(seen).toEqual([...seen].sort());
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen).toEqual(
        expect.arrayContaining([
          receiver.url,
          'http://127.0.0.8:2',
          'https://capped.example.com:443',
          'https://failing.example.com:443',
          'https://hooks.example.com:443',
        ]),
      );
      expect(seen.filter((h) => h.startsWith('https://old-'))).toEqual([]);
      // Any one host can still be read by name.
      expect((await service.api(`/v1/hosts/${encodeURIComponent('https://old-7.example.com:443')}`)).status).toBe(200);
      // A tenant's pages hold only its own hosts.
      const own = await service.apiJson('/v1/hosts?limit=1', { key: tenant.key });
      expect(own.items.map((h: { host: string }) => h.host)).toEqual([receiver.url]);
      expect(own.nextCursor).toBeNull(); // its one host, and no more
    } finally {
      await db.query(`DELETE FROM host WHERE host LIKE 'https://old-%' OR host IN ('https://capped.example.com:443', 'https://failing.example.com:443')`);
    }
  });

  it.each([['limit=0'], ['limit=1001'], ['limit=two'], ['cursor=not-a-host']])('should refuse GET /v1/hosts?%s with 400', async (query) => {
    const res = await service.api(`/v1/hosts?${query}`);
    expect(res.status).toBe(400);
    expect((await jsonOf(res)).code).toBe('validation_failed');
  });

  it('should answer 404 for a destination it has never seen and 401 without a key', async () => {
    expect((await service.api(`/v1/hosts/${encodeURIComponent('http://127.0.0.9:1')}`)).status).toBe(404);
    expect((await service.api('/v1/hosts', { key: null })).status).toBe(401);
  });
});
