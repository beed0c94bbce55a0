import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NetworkPolicy } from '../../src/common/network.policy.js';
import { connect } from '../support/database.js';
import { Receiver } from '../support/receiver.js';
import { jsonOf, startTestService, waitFor, type TestService } from '../support/service.js';

type Attempt = { outcome: string; statusCode: number | null; error: string | null; responseHeaders: unknown; responseBody: string | null };

/**
 * Private destinations per key, with ALLOW_PRIVATE_NETWORKS set (127.0.0.0/8, as every
 * test service has it): only a key granted them reaches them, checked on the address
 * each call connects to; a portal session never points its receiver at one, and its
 * destinations go to public addresses only at send time, whatever its key is granted.
 */
describe(`${NetworkPolicy.name} per key`, () => {
  let service: TestService;
  let secret: Receiver;
  let db: pg.Client;
  let tenant: { id: string; key: string };

  beforeAll(async () => {
    service = await startTestService();
    // a private service: what it answers must never reach a key without the grant
    secret = await Receiver.start({ host: '127.0.0.7' });
    db = await connect(service.databaseUrl);
    tenant = await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'tenant' } });
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
    await secret?.close();
  });

  async function sendOne(key: string, callback: Record<string, unknown>): Promise<{ status: string; attempts: Attempt[] }> {
    const res = await service.api('/v1/batches', { method: 'POST', key, json: { callbacks: [{ maxAttempts: 1, ...callback }] } });
    expect(res.status).toBe(202);
    const id = (await jsonOf(res)).callbacks[0].id as string;
    return waitFor(async () => {
      const c = await service.apiJson(`/v1/callbacks/${id}`, { key });
      return ['succeeded', 'failed'].includes(c.status) ? c : undefined;
    }, 10_000);
  }

  it('should block a key without the grant from a private address where it connects, store nothing of it, and send once an admin grants it', async () => {
    const refused = await sendOne(tenant.key, { url: `${secret.url}/metrics?body=private-figures` });
    expect(refused.status).toBe('failed');
    expect(refused.attempts).toHaveLength(1);
    expect(refused.attempts[0]).toMatchObject({ outcome: 'blocked', statusCode: null, responseHeaders: null, responseBody: null });
    expect(refused.attempts[0].error).toMatch(/no grant for private networks/);
    // by name too: localhost resolves to loopback, refused on the address the lookup gave
    const byName = await sendOne(tenant.key, { url: `http://localhost:${new URL(secret.url).port}/metrics` });
    expect(byName.attempts[0].outcome).toBe('blocked');
    expect(secret.requests).toHaveLength(0);
    expect((await service.apiJson('/v1/keys')).items.map((k: { name: string; allowPrivateNetworks: boolean }) => [k.name, k.allowPrivateNetworks])).toEqual([
      ['bootstrap', true],
      ['tenant', false],
    ]);

    // the install's own key goes as before
    const own = await sendOne(service.key, { url: `${secret.url}/metrics?body=private-figures` });
    expect(own.attempts[0]).toMatchObject({ outcome: 'success', responseBody: 'private-figures' });

    // granted by an admin: the tenant's calls go too (a plain key cannot grant itself)
    expect((await service.api(`/v1/keys/${tenant.id}`, { method: 'PATCH', key: tenant.key, json: { allowPrivateNetworks: true } })).status).toBe(403);
    const granted = await service.apiJson(`/v1/keys/${tenant.id}`, { method: 'PATCH', json: { allowPrivateNetworks: true } });
    expect(granted).toMatchObject({ name: 'tenant', allowPrivateNetworks: true, weight: 1 });
    expect((await sendOne(tenant.key, { url: `${secret.url}/granted` })).attempts[0].outcome).toBe('success');
    await service.apiJson(`/v1/keys/${tenant.id}`, { method: 'PATCH', json: { allowPrivateNetworks: false } });
    expect((await sendOne(tenant.key, { url: `${secret.url}/revoked` })).attempts[0].outcome).toBe('blocked');
    expect(secret.requests.map((r) => r.url)).toEqual(['/metrics?body=private-figures', '/granted']);
    // PATCH with nothing to change is a 400
    expect((await service.api(`/v1/keys/${tenant.id}`, { method: 'PATCH', json: {} })).status).toBe(400);
  });

  describe('the portal', () => {
    const portal = (token: string, path: string, init: { method?: string; json?: unknown } = {}) =>
      service.api(`/portal/api${path}`, { method: init.method ?? 'GET', json: init.json, key: token });
    const mint = async (name: string, capabilities = ['edit']) => {
      const res = await service.api(`/v1/receivers/${name}/portal-sessions`, { method: 'POST', json: { capabilities } });
      expect(res.status).toBe(201);
      return (await jsonOf(res)).token as string;
    };

    it('should refuse to set a URL the public rule refuses, whatever ALLOW_PRIVATE_NETWORKS says, and change nothing', async () => {
      expect((await service.api('/v1/receivers/shop', { method: 'PUT', json: { url: 'https://198.51.99.1/hooks' } })).status).toBe(201);
      const token = await mint('shop');
      const port = new URL(service.url).port;
      for (const url of [
        `http://127.0.0.1:${port}/metrics`,
        `http://localhost:${port}/metrics`,
        'http://[::1]/x',
        'http://[::ffff:127.0.0.1]/x',
        'http://2130706433/x',
        'http://10.0.0.1/x',
        'http://169.254.169.254/latest/meta-data/',
      ]) {
        const res = await portal(token, '/receiver', { method: 'PATCH', json: { url } });
        const body = await jsonOf(res);
        expect([url, res.status, body.code]).toEqual([url, 400, 'validation_failed']);
        expect(body.message).toMatch(/public addresses only/);
      }
      const shop = await service.apiJson('/v1/receivers/shop');
      expect(shop.url).toBe('https://198.51.99.1/hooks');
      expect((await db.query(`SELECT portal_hosts FROM receiver WHERE name = 'shop'`)).rows[0].portal_hosts).toEqual([]);
      // a public address is taken, and recorded as the portal's
      const ok = await portal(token, '/receiver', { method: 'PATCH', json: { url: 'https://198.51.99.2/hooks' } });
      expect(ok.status).toBe(200);
      expect((await db.query(`SELECT portal_hosts FROM receiver WHERE name = 'shop'`)).rows[0].portal_hosts).toEqual(['https://198.51.99.2:443']);
    });

    it('should send a destination a portal session chose to public addresses only, whatever its key is granted and the name resolves to later (Send a test shows nothing private)', async () => {
      // the portal set the URL while its name resolved to a public address; it now resolves to the private service
      // (DNS rebinding): the destination is in the receiver's portal_hosts, the URL points at the private service
      expect((await service.api('/v1/receivers/rebound', { method: 'PUT', json: { url: `${secret.url}/metrics?body=private-figures` } })).status).toBe(201);
      await db.query(`UPDATE receiver SET portal_hosts = ARRAY[$1] WHERE name = 'rebound'`, [secret.url]);
      const token = await mint('rebound', ['replay']);
      const before = secret.requests.length;
      const res = await portal(token, '/test', { method: 'POST' });
      expect(res.status).toBeLessThan(300);
      const shown = await jsonOf(res);
      expect(shown.status).toBe('failed');
      expect(shown.attempts[0]).toMatchObject({ outcome: 'blocked', statusCode: null, responseHeaders: null, responseBody: null });
      expect(shown.attempts[0].error).toMatch(/a portal session chose its destination/);
      // the key's own callbacks to that destination go public only too (the bootstrap key is granted)
      const own = await sendOne(service.key, { receiver: 'rebound' });
      expect(own.attempts[0].outcome).toBe('blocked');
      expect(secret.requests.length).toBe(before);
      const stored = await db.query(
        `SELECT count(*)::int AS n FROM attempt a JOIN callback c ON c.id = a.callback_id JOIN receiver r ON r.id = c.receiver_id
         WHERE r.name = 'rebound' AND (a.response_body IS NOT NULL OR a.response_headers IS NOT NULL)`,
      );
      expect(stored.rows[0].n).toBe(0);
    });
  });
});
