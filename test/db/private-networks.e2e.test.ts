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

    it("should refuse a token URL the public rule refuses, and record a public one as the portal's", async () => {
      expect((await service.api('/v1/receivers/bank', { method: 'PUT', json: { url: 'https://198.51.99.1/hooks' } })).status).toBe(201);
      const token = await mint('bank');
      const oauth2 = (tokenUrl: string) => ({ type: 'oauth2', tokenUrl, clientId: 'callbacks', clientSecret: 'portal-secret-0123' });
      for (const tokenUrl of [`${secret.url}/token`, 'http://localhost/token', 'http://10.0.0.1/token', 'http://169.254.169.254/token']) {
        const res = await portal(token, '/receiver', { method: 'PATCH', json: { auth: oauth2(tokenUrl) } });
        const body = await jsonOf(res);
        expect([tokenUrl, res.status, body.code]).toEqual([tokenUrl, 400, 'validation_failed']);
        expect(body.message).toMatch(/^auth\.tokenUrl: the portal sets public addresses only/);
      }
      expect((await service.apiJson('/v1/receivers/bank')).auth).toBeNull();
      expect((await db.query(`SELECT portal_hosts FROM receiver WHERE name = 'bank'`)).rows[0].portal_hosts).toEqual([]);
      // a public one is taken, and its destination recorded as the portal's (the receiver's URL stays the key's)
      const ok = await portal(token, '/receiver', { method: 'PATCH', json: { auth: oauth2('https://198.51.99.3/token') } });
      expect(ok.status).toBe(200);
      expect((await jsonOf(ok)).auth).toMatchObject({ type: 'oauth2', tokenUrl: 'https://198.51.99.3/token', clientSecret: 'set' });
      expect((await db.query(`SELECT portal_hosts FROM receiver WHERE name = 'bank'`)).rows[0].portal_hosts).toEqual(['https://198.51.99.3:443']);
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
      // the test call's attempt, made at once
      const shown = await jsonOf(res);
      expect(shown).toMatchObject({ ok: false, outcome: 'blocked', statusCode: null, responseHeaders: null, responseBody: null });
      expect(shown.error).toMatch(/a portal session chose its destination/);
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
  describe('OAuth2 token requests and the test call', () => {
    const oauth2 = (tokenUrl: string) => ({ type: 'oauth2', tokenUrl, clientId: 'callbacks', clientSecret: 'token-secret-0123' });
    const put = (name: string, key: string, json: unknown) => service.api(`/v1/receivers/${name}`, { method: 'PUT', key, json });
    const received = (from: number) => secret.requests.slice(from).map((r) => r.url);

    it('should fetch a token where its key may connect: private ranges only with the grant, and public only from a token URL a portal session chose', async () => {
      const other = await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'no grant' } });
      // the private service answers 500 as a token endpoint: whoever reaches it shows in its requests
      const tokenUrl = `${secret.url}/token?code=500`;
      const before = secret.requests.length;

      // a key without the grant: the token request is blocked where it connects; the attempt is an auth_error naming the endpoint
      expect((await put('tok-tenant', other.key, { url: `${secret.url}/hook`, auth: oauth2(tokenUrl) })).status).toBe(201);
      const refused = await sendOne(other.key, { receiver: 'tok-tenant' });
      expect(refused.attempts[0]).toMatchObject({ outcome: 'auth_error', statusCode: null, responseBody: null });
      expect(refused.attempts[0].error).toMatch(/^token endpoint .*no grant for private networks/);
      // the test call connects as the key's callbacks do
      await put('try-tenant', other.key, { url: `${secret.url}/try` });
      const tested = await service.apiJson('/v1/receivers/try-tenant/test', { method: 'POST', key: other.key });
      expect(tested).toMatchObject({ ok: false, outcome: 'blocked', statusCode: null, responseBody: null });
      expect(tested.error).toMatch(/no grant for private networks/);

      // a token URL a portal session chose goes to public addresses only, whatever the key is granted
      expect((await put('tok-portal', service.key, { url: `${secret.url}/hook`, auth: oauth2(tokenUrl) })).status).toBe(201);
      await db.query(`UPDATE receiver SET portal_hosts = ARRAY[$1] WHERE name = 'tok-portal'`, [secret.url]);
      const portalChosen = await sendOne(service.key, { receiver: 'tok-portal' });
      expect(portalChosen.attempts[0].outcome).toBe('auth_error');
      expect(portalChosen.attempts[0].error).toMatch(/^token endpoint .*a portal session chose its destination/);
      expect(received(before)).toEqual([]);

      // the granted key's own token URL is asked (its 500 is still an auth_error)
      expect((await put('tok-granted', service.key, { url: `${secret.url}/hook`, auth: oauth2(tokenUrl) })).status).toBe(201);
      const asked = await sendOne(service.key, { receiver: 'tok-granted' });
      expect(asked.attempts[0]).toMatchObject({ outcome: 'auth_error' });
      expect(asked.attempts[0].error).toMatch(/answered 500/);
      // the receiver records a request when its connection closes, which may be after the answer came back
      expect(await waitFor(() => (secret.requests.length > before ? received(before) : undefined))).toEqual(['/token?code=500']);
    });
  });
});
