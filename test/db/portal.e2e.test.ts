import http from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PortalGuard } from '../../src/portal/portal.guard.js';
import { signPortalToken } from '../../src/portal/portal-token.policy.js';
import { SecretKeyring } from '../../src/config/secret-keyring.js';
import { checkedFetch } from '../support/openapi-validator.js';
import { Receiver } from '../support/receiver.js';
import { verifies } from '../support/signatures.js';
import { jsonOf, startTestService, TEST_SECRETS_KEY, waitFor, type TestService } from '../support/service.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- answers are asserted on their shape at run time */

/** How a portal request authenticates: the cookie a browser holds (with or without its CSRF token), or the token as a bearer. */
type Auth = { cookie: string; csrf?: string } | { bearer: string } | Record<string, never>;

describe(PortalGuard.name, () => {
  let service: TestService;
  let receiver: Receiver;
  let db: pg.Client;
  let otherKey: string;
  /** Callbacks by receiver: a (failed and succeeded), b (failed), other key's c (failed). */
  const ids: Record<'aFailed' | 'aOk' | 'bFailed' | 'cFailed', string> = {} as never;

  const portal = (path: string, auth: Auth = {}, init: { method?: string; json?: unknown } = {}) => {
    const headers = new Headers();
    if ('cookie' in auth) headers.set('cookie', `cbp_session=${auth.cookie}`);
    if ('cookie' in auth && auth.csrf !== undefined) headers.set('x-csrf-token', auth.csrf);
    if ('bearer' in auth) headers.set('authorization', `Bearer ${auth.bearer}`);
    if (init.json !== undefined) headers.set('content-type', 'application/json');
    return checkedFetch(service.url, `${service.url}${path}`, {
      method: init.method ?? 'GET',
      headers,
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
    });
  };
  const mint = async (name: string, body: Record<string, unknown> = {}, key = service.key) => {
    const res = await service.api(`/v1/receivers/${name}/portal-sessions`, { method: 'POST', json: body, key });
    expect(res.status, await res.clone().text()).toBe(201);
    return (await res.json()) as { url: string; token: string; expiresAt: string; capabilities: string[] };
  };
  /** The session's CSRF token, read as the page reads it. */
  const csrfOf = async (token: string) => (await jsonOf(await portal('/portal/api/session', { cookie: token }))).csrfToken as string;
  const sessionCount = async () => Number((await db.query('SELECT count(*) FROM portal_session')).rows[0].count);

  async function sendTo(name: string, path: string, key = service.key) {
    const res = await service.api('/v1/batches', {
      method: 'POST',
      key,
      json: { callbacks: [{ receiver: name, url: `${receiver.url}${path}`, maxAttempts: 1, body: { path } }] },
    });
    expect(res.status).toBe(202);
    const id = (await jsonOf(res)).callbacks[0].id as string;
    await waitFor(async () => ['succeeded', 'failed'].includes((await service.apiJson(`/v1/callbacks/${id}`, { key })).status), 15_000);
    return id;
  }

  beforeAll(async () => {
    [service, receiver] = await Promise.all([startTestService(), Receiver.start()]);
    db = new pg.Client({ connectionString: service.databaseUrl });
    await db.connect();
    otherKey = (await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'tenant b', allowPrivateNetworks: true } })).key;
    for (const name of ['a', 'b'])
      expect((await service.api(`/v1/receivers/${name}`, { method: 'PUT', json: { url: `${receiver.url}/${name}` } })).status).toBe(201);
    expect((await service.api('/v1/receivers/c', { method: 'PUT', key: otherKey, json: { url: `${receiver.url}/c` } })).status).toBe(201);
    // another key's receiver with the same name as ours: names are per key
    expect((await service.api('/v1/receivers/a', { method: 'PUT', key: otherKey, json: { url: `${receiver.url}/a2` } })).status).toBe(201);
    [ids.aFailed, ids.aOk, ids.bFailed, ids.cFailed] = await Promise.all([
      sendTo('a', '/a?code=500'),
      sendTo('a', '/a'),
      sendTo('b', '/b?code=500'),
      sendTo('c', '/c?code=500', otherKey),
    ]);
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
    await receiver?.close();
  });

  describe('minting', () => {
    it('should answer a link to the portal with a signed token that is not an API key, for the key’s own receiver only', async () => {
      const s = await mint('a', { capabilities: ['replay'], ttlSeconds: 600 });
      expect(s.url).toBe(`${service.url}/portal/session?token=${s.token}`);
      expect(s.token).toMatch(/^cbp_[\w-]+\.[\w-]{43}$/);
      expect(s.capabilities).toEqual(['read', 'replay']);
      expect(Math.abs(Date.parse(s.expiresAt) - Date.now() - 600_000)).toBeLessThan(5_000);
      expect((await service.api('/v1/receivers/c/portal-sessions', { method: 'POST', json: {} })).status).toBe(404);
      expect((await service.api('/v1/receivers/nobody/portal-sessions', { method: 'POST', json: {} })).status).toBe(404);
    });

    it("should build the link from the service's own address, never from the request's Host header", async () => {
      const body = '{}';
      const forged = await new Promise<{ status: number; json: any }>((resolve, reject) => {
        const req = http.request(`${service.url}/v1/receivers/a/portal-sessions`, {
          method: 'POST',
          headers: { host: 'evil.example', authorization: `Bearer ${service.key}`, 'content-type': 'application/json', 'content-length': body.length },
        });
        req.on('response', (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(text) }));
        });
        req.on('error', reject);
        req.end(body);
      });
      expect(forged.status).toBe(201);
      expect(forged.json.url).toBe(`${service.url}/portal/session?token=${forged.json.token}`);
    });

    it('should refuse bad input with a 400 and store nothing', async () => {
      const before = await sessionCount();
      for (const body of [
        { ttlSeconds: 10 },
        { ttlSeconds: 7 * 24 * 3600 + 1 },
        { ttlSeconds: 'long' },
        { capabilities: ['read', 'admin'] },
        { capabilities: 'edit' },
        { returnUrl: 'javascript:alert(1)' },
        { theme: { color: 'red' } },
        { theme: { '--bg': 'red;} body{display:none' } },
        { theme: { '--bg': 'url(https://evil.example/x.png)' } },
        // regression: a NUL or half a surrogate pair was a 500 (jsonb refused them)
        { theme: { '--bg': 'red\u0000' } },
        { theme: { '--bg': '\ud800' } },
        { theme: { '--bg': 'red\nblue' } },
        { extra: true },
      ]) {
        const res = await service.api('/v1/receivers/a/portal-sessions', { method: 'POST', json: body });
        expect(res.status, JSON.stringify(body)).toBe(400);
      }
      expect(await sessionCount()).toBe(before);
    });
  });

  describe('exchange for a cookie', () => {
    it('should set an HttpOnly SameSite=Strict cookie (not Secure over http) and redirect to the page without the token', async () => {
      const s = await mint('a', { ttlSeconds: 900 });
      const res = await fetch(s.url, { redirect: 'manual' });
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toBe('/portal');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      const [cookie, ...more] = res.headers.getSetCookie();
      expect(more).toEqual([]);
      const attrs = cookie.split('; ');
      expect(attrs[0]).toBe(`cbp_session=${s.token}`);
      expect(attrs).toContain('HttpOnly');
      expect(attrs).toContain('SameSite=Strict');
      expect(attrs).toContain('Path=/');
      expect(attrs).not.toContain('Secure');
      const maxAge = Number(attrs.find((a) => a.startsWith('Max-Age='))!.slice(8));
      expect(maxAge).toBeGreaterThan(890);
      expect(maxAge).toBeLessThanOrEqual(900);
    });

    it('should refuse a bad token with a 401 and set no cookie', async () => {
      const s = await mint('a');
      const tampered = `${s.token.slice(0, -2)}${s.token.endsWith('AA') ? 'AB' : 'AA'}`;
      for (const url of [
        `${service.url}/portal/session?token=${tampered}`,
        `${service.url}/portal/session`,
        `${service.url}/portal/session?token=${service.key}`,
      ]) {
        const res = await fetch(url, { redirect: 'manual' });
        expect(res.status, url).toBe(401);
        expect(res.headers.getSetCookie()).toEqual([]);
      }
    });
  });

  describe('scope', () => {
    it('should show only its own receiver’s deliveries, not another receiver’s of the same key nor another key’s', async () => {
      const { token } = await mint('a', { capabilities: ['replay'] });
      const page = await jsonOf(await portal('/portal/api/deliveries', { cookie: token }));
      expect(page.items.map((c: any) => c.id).sort()).toEqual([ids.aFailed, ids.aOk].sort());
      expect((await portal(`/portal/api/deliveries/${ids.aFailed}`, { cookie: token })).status).toBe(200);
      for (const id of [ids.bFailed, ids.cFailed]) {
        expect((await portal(`/portal/api/deliveries/${id}`, { cookie: token })).status).toBe(404);
        expect((await portal(`/portal/api/deliveries/${id}/replay`, { bearer: token }, { method: 'POST' })).status).toBe(404);
      }
      // nothing of the others was sent again
      expect((await service.apiJson(`/v1/callbacks/${ids.bFailed}`)).status).toBe('failed');
      expect((await service.apiJson(`/v1/callbacks/${ids.cFailed}`, { key: otherKey })).status).toBe('failed');
      expect((await jsonOf(await portal('/portal/api/receiver', { cookie: token }))).url).toBe(`${receiver.url}/a`);
    });

    it('should filter its deliveries by status, time and event type, and page them newest first', async () => {
      expect((await service.api('/v1/event-types/order.paid', { method: 'PUT', json: {} })).status).toBe(201);
      expect((await service.api('/v1/receivers/f', { method: 'PUT', json: { url: `${receiver.url}/f`, eventTypes: ['order.paid'] } })).status).toBe(201);
      const direct = await sendTo('f', '/f');
      const event = await jsonOf(await service.api('/v1/events', { method: 'POST', json: { type: 'order.paid', payload: { n: 1 } } }));
      const [delivery] = (await service.apiJson(`/v1/callbacks?event=${event.id}`)).items.map((c: any) => c.id);
      await waitFor(async () => (await service.apiJson(`/v1/callbacks/${delivery}`)).status === 'succeeded', 10_000);
      const { token } = await mint('f');
      const ids = async (query: string) => {
        const res = await portal(`/portal/api/deliveries?${query}`, { bearer: token });
        expect(res.status, query).toBe(200);
        return (await jsonOf(res)).items.map((c: any) => c.id);
      };
      const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
      const inAMinute = new Date(Date.now() + 60_000).toISOString();
      expect(await ids('')).toEqual([delivery, direct]);
      expect(await ids('eventType=order.paid')).toEqual([delivery]);
      expect(await ids('eventType=order.refunded')).toEqual([]);
      expect(await ids('status=succeeded')).toEqual([delivery, direct]);
      expect(await ids('status=failed')).toEqual([]);
      expect(await ids(`since=${hourAgo}&until=${inAMinute}`)).toEqual([delivery, direct]);
      expect(await ids(`since=${inAMinute}`)).toEqual([]);
      expect(await ids(`until=${hourAgo}`)).toEqual([]);
      const first = await jsonOf(await portal('/portal/api/deliveries?limit=1', { bearer: token }));
      expect([first.items.map((c: any) => c.id), first.nextCursor]).toEqual([[delivery], delivery]);
      expect(await ids(`limit=1&cursor=${delivery}`)).toEqual([direct]);
      for (const bad of ['status=lost', 'since=yesterday', 'limit=0', 'limit=201', 'cursor=x'])
        expect((await portal(`/portal/api/deliveries?${bad}`, { bearer: token })).status, bad).toBe(400);
    });

    it('should not follow a replay (recovery) of another receiver', async () => {
      const { token } = await mint('a', { capabilities: ['replay'] });
      const other = await service.apiJson('/v1/recoveries', { method: 'POST', json: { receiver: 'b', status: ['cancelled'] } });
      expect(other.id).toBeDefined();
      expect((await portal(`/portal/api/replays/${other.id}`, { cookie: token })).status).toBe(404);
    });

    it('should be refused by every /v1 route, as a bearer token and as the cookie', async () => {
      const { token } = await mint('a', { capabilities: ['replay', 'rotate', 'edit'] });
      const routes: Array<[string, string]> = [
        ['GET', '/v1/keys'],
        ['POST', '/v1/keys'],
        ['GET', '/v1/hosts'],
        ['GET', '/v1/batches'],
        ['POST', '/v1/batches'],
        ['GET', '/v1/receivers'],
        ['GET', '/v1/receivers/a'],
        ['POST', '/v1/receivers/a/portal-sessions'],
        ['GET', `/v1/callbacks/${ids.aFailed}`],
        ['GET', '/v1/callbacks?receiver=a'],
      ];
      for (const [method, path] of routes) {
        const body = method === 'POST' ? { json: {} } : {};
        expect((await service.api(path, { method, key: token, ...body })).status, `${method} ${path} bearer`).toBe(401);
        expect((await service.api(path, { method, key: null, headers: { cookie: `cbp_session=${token}` }, ...body })).status, `${method} ${path} cookie`).toBe(
          401,
        );
      }
    });

    it('should refuse a token whose claims were changed (another receiver) or that another key signed', async () => {
      const { token } = await mint('a');
      const [body, sig] = token.slice(4).split('.');
      const claims = JSON.parse(Buffer.from(body, 'base64url').toString());
      const b = (await db.query("SELECT id FROM receiver WHERE name = 'b' AND api_key_id = (SELECT api_key_id FROM receiver WHERE id = $1)", [claims.rid]))
        .rows[0].id;
      const swapped = `cbp_${Buffer.from(JSON.stringify({ ...claims, rid: b })).toString('base64url')}.${sig}`;
      const otherKeyring = new SecretKeyring(Buffer.alloc(32, 9).toString('base64'));
      const foreign = signPortalToken({ ...claims, kid: otherKeyring.currentId }, otherKeyring.derive('callbacks/portal-session/v1')!);
      // the service's key id on claims of a live session, each refused by the signature alone
      const ownKid = new SecretKeyring(TEST_SECRETS_KEY).currentId;
      const wrongKey = signPortalToken({ ...claims, kid: ownKid }, otherKeyring.derive('callbacks/portal-session/v1')!);
      const extended = `cbp_${Buffer.from(JSON.stringify({ ...claims, exp: claims.exp + 3600 })).toString('base64url')}.${sig}`;
      for (const t of [swapped, foreign, wrongKey, extended]) expect((await portal('/portal/api/session', { cookie: t })).status).toBe(401);
      // the same claims signed with the service's own key pass: the refusals above are the signature's
      const own = new SecretKeyring(TEST_SECRETS_KEY);
      expect((await portal('/portal/api/session', { cookie: signPortalToken(claims, own.derive('callbacks/portal-session/v1')!) })).status).toBe(200);
      // validly signed, but naming another receiver than its session's row: refused by the row
      expect((await portal('/portal/api/session', { cookie: signPortalToken({ ...claims, rid: b }, own.derive('callbacks/portal-session/v1')!) })).status).toBe(
        401,
      );
    });
  });

  describe('expiry and revocation', () => {
    const keyring = new SecretKeyring(TEST_SECRETS_KEY);
    const resign = (token: string, change: Record<string, unknown>) => {
      const claims = JSON.parse(Buffer.from(token.slice(4).split('.')[0], 'base64url').toString());
      return signPortalToken({ ...claims, ...change }, keyring.derive('callbacks/portal-session/v1')!);
    };

    it('should refuse a token past its expiry, and a session whose row expired', async () => {
      const { token } = await mint('a');
      expect((await portal('/portal/api/session', { cookie: token })).status).toBe(200);
      expect((await portal('/portal/api/session', { cookie: resign(token, { exp: Math.floor(Date.now() / 1000) - 1 }) })).status).toBe(401);
      const claims = JSON.parse(Buffer.from(token.slice(4).split('.')[0], 'base64url').toString());
      await db.query("UPDATE portal_session SET expires_at = now() - interval '1 second' WHERE id = $1", [claims.sid]);
      expect((await portal('/portal/api/session', { cookie: token })).status).toBe(401);
      expect((await portal('/portal/api/session', { bearer: token })).status).toBe(401);
    });

    it("should refuse every session of a receiver once revoked, and keep other receivers' sessions", async () => {
      const [a1, a2, b1] = await Promise.all([mint('a'), mint('a'), mint('b')]);
      const res = await service.api('/v1/receivers/a/portal-sessions', { method: 'DELETE' });
      expect(res.status).toBe(200);
      expect((await jsonOf(res)).revoked).toBeGreaterThanOrEqual(2);
      for (const t of [a1.token, a2.token]) expect((await portal('/portal/api/session', { cookie: t })).status).toBe(401);
      expect((await portal('/portal/api/session', { cookie: b1.token })).status).toBe(200);
      expect((await service.api('/v1/receivers/c/portal-sessions', { method: 'DELETE' })).status).toBe(404);
      // the next mint drops the receiver's sessions that can no longer be used
      const dead =
        "SELECT count(*)::int AS n FROM portal_session s JOIN receiver r ON r.id = s.receiver_id WHERE r.name = 'a' AND (s.revoked_at IS NOT NULL OR s.expires_at <= now())";
      expect((await db.query(dead)).rows[0].n).toBeGreaterThanOrEqual(2);
      const fresh = await mint('a');
      expect((await db.query(dead)).rows[0].n).toBe(0);
      expect((await portal('/portal/api/session', { cookie: fresh.token })).status).toBe(200);
      expect((await portal('/portal/api/session', { cookie: b1.token })).status).toBe(200);
    });

    it('should refuse the sessions of a revoked API key and of a deleted receiver', async () => {
      const doomed = (await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'doomed', allowPrivateNetworks: true } })) as {
        id: string;
        key: string;
      };
      expect((await service.api('/v1/receivers/d', { method: 'PUT', key: doomed.key, json: { url: `${receiver.url}/d` } })).status).toBe(201);
      const d = await mint('d', {}, doomed.key);
      expect((await portal('/portal/api/session', { cookie: d.token })).status).toBe(200);
      expect((await service.api(`/v1/keys/${doomed.id}`, { method: 'DELETE' })).status).toBe(200);
      expect((await portal('/portal/api/session', { cookie: d.token })).status).toBe(401);

      expect((await service.api('/v1/receivers/e', { method: 'PUT', json: { url: `${receiver.url}/e` } })).status).toBe(201);
      const e = await mint('e');
      expect((await service.api('/v1/receivers/e', { method: 'DELETE' })).status).toBe(200);
      expect((await portal('/portal/api/session', { cookie: e.token })).status).toBe(401);

      // Regression: while its delete task runs (its row kept, renamed, deleted_at set, as DELETE leaves it), the portal answered 200.
      expect((await service.api('/v1/receivers/being-deleted', { method: 'PUT', json: { url: `${receiver.url}/bd` } })).status).toBe(201);
      const f = await mint('being-deleted');
      await db.query(`UPDATE receiver SET deleted_at = now(), name = '/deleted/' || id WHERE name = 'being-deleted'`);
      for (const path of ['/portal/api/session', '/portal/api/secrets', '/portal/api/deliveries']) {
        expect((await portal(path, { cookie: f.token })).status, path).toBe(401);
      }
    });
  });

  describe('capabilities and CSRF', () => {
    it('should refuse every change to a read-only session with a 403, and change nothing', async () => {
      const { token } = await mint('b');
      const auth = { cookie: token, csrf: await csrfOf(token) };
      const secretsBefore = (await jsonOf(await portal('/portal/api/secrets', auth))).secrets;
      const changes: Array<[string, string, unknown?]> = [
        ['PATCH', '/portal/api/receiver', { url: 'http://127.0.0.1:9/elsewhere' }],
        ['PATCH', '/portal/api/receiver', { disabled: true }],
        ['POST', `/portal/api/deliveries/${ids.bFailed}/replay`],
        ['POST', '/portal/api/replays', { since: new Date(Date.now() - 3_600_000).toISOString() }],
        ['POST', '/portal/api/test'],
        ['POST', '/portal/api/secrets/rotate'],
      ];
      for (const [method, path, json] of changes) {
        const res = await portal(path, auth, { method, json });
        expect(res.status, `${method} ${path}`).toBe(403);
      }
      const r = await service.apiJson('/v1/receivers/b');
      expect([r.url, r.disabled]).toEqual([`${receiver.url}/b`, false]);
      expect((await service.apiJson(`/v1/callbacks/${ids.bFailed}`)).status).toBe('failed');
      expect((await jsonOf(await portal('/portal/api/secrets', auth))).secrets).toEqual(secretsBefore);
      expect(receiver.requests.filter((q) => q.url.startsWith('/b')).length).toBe(1);
    });

    it('should refuse a change made with the cookie without the session’s CSRF token (missing, wrong, another session’s)', async () => {
      const [mine, theirs] = await Promise.all([mint('b', { capabilities: ['edit'] }), mint('b', { capabilities: ['edit'] })]);
      const change = { method: 'PATCH', json: { headers: { 'x-portal': 'changed' } } };
      for (const csrf of [undefined, '', 'x'.repeat(43), await csrfOf(theirs.token)]) {
        expect((await portal('/portal/api/receiver', { cookie: mine.token, csrf }, change)).status, String(csrf)).toBe(403);
      }
      expect((await service.apiJson('/v1/receivers/b')).headers).toEqual({});
      const ok = await portal('/portal/api/receiver', { cookie: mine.token, csrf: await csrfOf(mine.token) }, change);
      expect(ok.status).toBe(200);
      expect((await service.apiJson('/v1/receivers/b')).headers).toEqual({ 'x-portal': 'changed' });
      // a form post (not JSON) is refused before anything reads it
      const form = await fetch(`${service.url}/portal/api/receiver`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${mine.token}`, 'content-type': 'text/plain' },
        body: 'url=http://127.0.0.1:9/x',
      });
      expect([form.status, (await jsonOf(form)).code]).toEqual([415, 'unsupported_media_type']);
      // a bearer token is never sent by a browser on its own: no CSRF token needed
      expect((await portal('/portal/api/receiver', { bearer: mine.token }, { method: 'PATCH', json: { headers: {} } })).status).toBe(200);
    });

    it('should let edit change the URL and headers, disable and enable, and refuse bad settings with a 400 that changes nothing', async () => {
      expect((await service.api('/v1/receivers/g', { method: 'PUT', json: { url: `${receiver.url}/g` } })).status).toBe(201);
      const { token } = await mint('g', { capabilities: ['edit'] });
      const patch = (json: unknown) => portal('/portal/api/receiver', { bearer: token }, { method: 'PATCH', json });
      for (const bad of [
        {},
        { url: 'ftp://127.0.0.1/x' },
        { headers: { 'bad header': 'x' } },
        { disabled: 'yes' },
        { name: 'h' },
        { url: `${receiver.url}/g2`, eventTypes: ['x'] },
        // regression: null cleared the url (every batch naming the receiver then a 400) or the headers
        { url: null },
        { headers: null },
        { disabled: null },
      ]) {
        expect((await patch(bad)).status, JSON.stringify(bad)).toBe(400);
      }
      const unchanged = await service.apiJson('/v1/receivers/g');
      expect([unchanged.url, unchanged.headers, unchanged.disabled, unchanged.eventTypes]).toEqual([`${receiver.url}/g`, {}, false, []]);
      // a public address (nothing is sent to g here): the portal sets no other (test/db/private-networks.e2e.test.ts)
      const changed = await jsonOf(await patch({ url: 'https://198.51.99.1/g2', headers: { 'x-shop': 'g' } }));
      expect([changed.url, changed.headers]).toEqual(['https://198.51.99.1/g2', { 'x-shop': 'g' }]);
      expect((await jsonOf(await patch({ disabled: true }))).disabled).toBe(true);
      expect((await service.apiJson('/v1/receivers/g')).disabled).toBe(true);
      expect((await portal('/portal/api/test', { bearer: token }, { method: 'POST' })).status).toBe(403);
      expect((await jsonOf(await patch({ disabled: false }))).disabled).toBe(false);
    });

    it('should let replay send one failed delivery and all failed since a time, each once more', async () => {
      const { token } = await mint('a', { capabilities: ['replay'] });
      const auth = { cookie: token, csrf: await csrfOf(token) };
      const before = receiver.requests.filter((q) => q.headers['webhook-id'] === ids.aFailed).length;
      expect((await portal(`/portal/api/deliveries/${ids.aOk}/replay`, auth, { method: 'POST' })).status).toBe(409);
      expect((await portal(`/portal/api/deliveries/${ids.aFailed}/replay`, auth, { method: 'POST' })).status).toBe(202);
      await waitFor(() => receiver.requests.filter((q) => q.headers['webhook-id'] === ids.aFailed).length === before + 1, 10_000);
      await waitFor(async () => (await service.apiJson(`/v1/callbacks/${ids.aFailed}`)).status === 'failed', 10_000);
      const since = new Date(Date.now() - 3_600_000).toISOString();
      const started = await jsonOf(await portal('/portal/api/replays', auth, { method: 'POST', json: { since } }));
      expect([started.receiver, started.matched]).toEqual(['a', 1]);
      await waitFor(async () => (await jsonOf(await portal(`/portal/api/replays/${started.id}`, auth))).failed === 1, 10_000);
      expect(receiver.requests.filter((q) => q.headers['webhook-id'] === ids.aFailed).length).toBe(before + 2);
      expect((await portal('/portal/api/replays', auth, { method: 'POST', json: { since: 'yesterday' } })).status).toBe(400);
    });

    it('should show each attempt’s request as sent: the headers the receiver got, signature included', async () => {
      const { token } = await mint('a');
      const d = await jsonOf(await portal(`/portal/api/deliveries/${ids.aOk}`, { bearer: token }));
      const got = receiver.requests.find((q) => q.headers['webhook-id'] === ids.aOk)!;
      const shown = d.attempts[0].request.headers;
      expect(shown['webhook-id']).toBe(ids.aOk);
      expect(Math.abs(Number(shown['webhook-timestamp']) - Number(got.headers['webhook-timestamp']))).toBeLessThanOrEqual(1);
      expect(d.attempts[0].request.body ?? '').toBe(got.body);
      // The shown signature is made again for the attempt's start, which can fall in the second before the signing:
      // whichever second it names, it is the receiver's signature of what was sent at that time.
      const { secrets } = await service.apiJson('/v1/receivers/a');
      const asShown = { ...got, headers: shown, body: d.attempts[0].request.body ?? '' };
      const bySecret = (r: typeof got) => (secrets as Array<{ secret: string }>).some((x) => verifies(x.secret, r));
      expect(bySecret(asShown)).toBe(true);
      expect(bySecret(got)).toBe(true);
      expect(bySecret({ ...asShown, body: `${asShown.body} ` })).toBe(false);
      expect(d.attempts[0].statusCode).toBe(200);
    });
  });

  describe('framing', () => {
    it('should deny framing of the portal pages when PORTAL_FRAME_ANCESTORS is unset, as of everything else', async () => {
      for (const path of ['/portal', '/portal/portal.js', '/dashboard']) {
        const res = await fetch(`${service.url}${path}`);
        expect(res.status, path).toBe(200);
        expect(res.headers.get('x-frame-options'), path).toBe('DENY');
        expect(res.headers.get('content-security-policy'), path).toMatch(/frame-ancestors 'none'/);
      }
    });
  });
});
