import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RateLimitService } from '../../src/auth/rate-limit.service.js';
import { startTestService, TEST_KEY, type TestService } from '../support/service.js';

describe(RateLimitService.name, () => {
  let service: TestService;
  let other: string;

  beforeAll(async () => {
    // 4 requests at once, then 1 per second: reached in a test, and slow enough that a busy machine does not refill in between.
    service = await startTestService({ role: 'api', apiRateLimitPerSec: 1, apiRateLimitBurst: 4 });
    // Creating the second key spends one of the admin key's tokens; wait for it to refill.
    other = (await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'neighbour' } })).key;
    await new Promise((r) => setTimeout(r, 1100));
  });
  afterAll(async () => {
    await service?.dispose();
  });

  it('should answer 429 with Retry-After once a key spent its burst, leave other keys alone, and serve again after the wait', async () => {
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await service.api('/v1/batches')).status);
    expect(statuses).toEqual([200, 200, 200, 200]);

    const limited = await service.api('/v1/batches');
    const body = await limited.json();
    expect(limited.status).toBe(429);
    expect(body).toMatchObject({ code: 'rate_limited', message: expect.stringMatching(/1 requests per second \(burst 4\)/), requestId: expect.any(String) });
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(1);

    // A bad key is refused by authentication and spends nobody's tokens.
    expect((await service.api('/v1/batches', { key: 'cbk_not_a_real_key_000000000000' })).status).toBe(401);
    expect((await service.api('/v1/batches', { key: other })).status).toBe(200);

    await new Promise((r) => setTimeout(r, retryAfter * 1000));
    expect((await service.api('/v1/batches')).status).toBe(200);
  });

  it('should hold off an address that sent too many wrong keys, before looking them up, for about a second per extra wrong key', async () => {
    const limited = await startTestService({ role: 'api', apiAuthFailuresPerSec: 1, apiAuthFailuresBurst: 3 });
    try {
      const wrong = () => limited.api('/v1/batches', { key: 'cbk_guessed_key_0000000000000000' }).then((r) => r.status);
      const statuses = [];
      for (let i = 0; i < 5; i++) statuses.push(await wrong());
      expect(statuses).toEqual([401, 401, 401, 429, 429]);
      const held = await limited.api('/v1/batches', { key: 'cbk_guessed_key_0000000000000001' });
      expect(held.status).toBe(429);
      expect(held.headers.get('retry-after')).toBe('1');
      expect(await held.json()).toMatchObject({ code: 'rate_limited', message: expect.stringMatching(/wrong API key/) });
      // A request without any key is a plain 401 and spends nothing.
      expect((await limited.api('/v1/batches', { key: null })).status).toBe(401);
      // Held off means every key from that address, until a failure token refills.
      expect((await limited.api('/v1/batches')).status).toBe(429);
      await new Promise((r) => setTimeout(r, 1100));
      expect((await limited.api('/v1/batches')).status).toBe(200);
      expect(await wrong()).toBe(401);
      // That key has now verified in this process: wrong keys from its address no longer hold it off.
      while ((await wrong()) !== 429);
      expect((await limited.api('/v1/batches')).status).toBe(200);
    } finally {
      await limited.dispose();
    }
  });

  it('should count wrong keys per client a TRUSTED_PROXIES proxy names, and per key prefix across clients', async () => {
    const limited = await startTestService({ role: 'api', apiAuthFailuresPerSec: 1, apiAuthFailuresBurst: 3, trustedProxies: ['127.0.0.1/32'] });
    try {
      const from = (client: string, key: string | null = TEST_KEY) =>
        limited.api('/v1/batches', { key, headers: { 'x-forwarded-for': client } }).then((r) => r.status);
      // four guesses of different keys from one client behind the proxy: the fourth is held off
      const guesses = [];
      for (const prefix of ['cbk_aaaaaaa1', 'cbk_aaaaaaa2', 'cbk_aaaaaaa3', 'cbk_aaaaaaa4'])
        guesses.push(await from('198.51.100.1', `${prefix}_wrong_tail_000000`));
      expect(guesses).toEqual([401, 401, 401, 429]);
      // another client behind the same proxy is not: its wrong key is a 401, its key (never verified here before) a 200
      expect(await from('198.51.100.2', 'cbk_bbbbbbb1_wrong_tail_000000')).toBe(401);
      expect(await from('198.51.100.2')).toBe(200);
      // guesses at one key prefix from many clients: the prefix is held off, for a new client too
      const spread = [];
      for (let i = 10; i < 14; i++) spread.push(await from(`198.51.100.${i}`, `cbk_sameprefx_wrong_tail_${i}`));
      expect(spread).toEqual([401, 401, 401, 429]);
      const held = await limited.api('/v1/batches', { key: 'cbk_sameprefx_wrong_tail_99', headers: { 'x-forwarded-for': '198.51.100.99' } });
      expect([held.status, ((await held.json()) as { message: string }).message]).toEqual([429, expect.stringMatching(/wrong API keys beginning as this one/)]);
      // the held client's working key, verified here before, is served all the same
      expect(await from('198.51.100.1')).toBe(200);
    } finally {
      await limited.dispose();
    }
  });

  it('should not limit public routes', async () => {
    const statuses = await Promise.all(Array.from({ length: 12 }, () => service.api('/health/live', { key: null }).then((r) => r.status)));
    expect(statuses.every((s) => s === 200)).toBe(true);
  });
});

describe('security headers and CORS', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ role: 'api' });
  });
  afterAll(async () => {
    await service?.dispose();
  });

  it.each([
    ['an API answer', '/v1/batches', 200],
    ['an API error', '/v1/batches/00000000-0000-7000-8000-000000000000', 404],
    ['an unauthenticated request', '/v1/batches', 401],
    ['an unknown route', '/v1/nothing-here', 404],
    ['the dashboard', '/dashboard', 200],
    ['the API docs', '/docs', 200],
  ])('should send security headers on %s', async (_name, path, status) => {
    const res = await service.api(path, { key: status === 401 ? null : undefined });
    expect(res.status).toBe(status);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/);
    expect(res.headers.get('cache-control')).toMatch(/no-store|no-cache/);
  });

  it('should not answer CORS: no Access-Control-* header on a preflight or a cross-origin request', async () => {
    const preflight = await service.api('/v1/batches', {
      method: 'OPTIONS',
      key: null,
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
    });
    const simple = await service.api('/v1/batches', { headers: { origin: 'https://evil.example' } });
    for (const res of [preflight, simple]) {
      expect([...res.headers.keys()].filter((h) => h.startsWith('access-control-'))).toEqual([]);
    }
    expect(preflight.status).toBeGreaterThanOrEqual(400);
  });

  it('should not echo the Authorization header or the key in any response', async () => {
    const responses = await Promise.all([
      service.api('/v1/batches'),
      service.api('/v1/batches', { method: 'POST', json: { callbacks: [{ url: 'nope' }] } }),
      service.api('/v1/nothing'),
      service.api('/v1/batches', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{bad' }),
    ]);
    for (const res of responses) {
      const text = await res.text();
      expect(text).not.toContain(service.key);
      expect([...res.headers.values()].join('\n')).not.toContain(service.key);
    }
  });
});

describe('request URL guards', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ role: 'api' });
  });
  afterAll(async () => {
    await service?.dispose();
  });

  it.each([
    // Regression: the property test found ?host=%00 and ?host=&host=0 answered 500 (Postgres
    // text cannot hold NUL; Prisma got an array). One guard now answers all of these alike.
    ['/v1/callbacks?host=%00', /NUL/],
    ['/v1/history/latency?host=a%00b', /NUL/],
    ['/v1/hosts/http%3A%2F%2Fa%00b%3A80', /NUL/],
    ['/v1/callbacks?host=&host=0', /"host" is given more than once/],
    ['/v1/callbacks?status=failed&status=pending', /"status" is given more than once/],
    ['/v1/batches?limit=1&limit=2', /"limit" is given more than once/],
  ])('should answer %s with 400 and the error shape', async (path, says) => {
    const res = await service.api(path);
    const body = await res.json();
    expect(res.status).toBe(400);
    expect(body).toMatchObject({ code: 'validation_failed', message: expect.stringMatching(says), requestId: expect.any(String) });
  });
});
