import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactText } from '../../src/logging/redact.policy.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { spawnService, type ServiceProcess } from '../support/process.js';
import { Receiver } from '../support/receiver.js';
import { TEST_KEY, TEST_SECRETS_KEY, waitFor } from '../support/service.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- answers are asserted on their shape at run time */

const METRICS_TOKEN = 'metrics+token/for=the-log-test-0123';

/**
 * A session's whole life against the built service at LOG_LEVEL=verbose, then every
 * credential it met looked for in everything the process wrote: keys made and revoked,
 * receivers' secrets brought, made, read and rotated (by the sender and through the
 * portal), a portal link minted and followed, its cookie and CSRF token, metrics
 * scraped, a customer's own token in a callback's header and URL, and wrong credentials
 * in headers and query strings.
 */
describe(`${redactText.name} over a session's whole life`, () => {
  let db: TestDatabase;
  let proc: ServiceProcess;
  let receiver: Receiver;
  let base = '';
  const secrets = new Set<string>([TEST_KEY, METRICS_TOKEN, TEST_SECRETS_KEY]);
  const keep = (...values: Array<string | undefined>) => {
    for (const v of values) if (v) secrets.add(v);
  };

  const call = async (path: string, init: { method?: string; key?: string | null; json?: unknown; headers?: Record<string, string> } = {}) => {
    const headers: Record<string, string> = { ...init.headers };
    if (init.key !== null) headers.authorization = `Bearer ${init.key ?? TEST_KEY}`;
    if (init.json !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${base}${path}`, {
      method: init.method ?? 'GET',
      headers,
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
      redirect: 'manual',
    });
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, json };
  };

  beforeAll(async () => {
    [db, receiver] = await Promise.all([createTestDatabase(), Receiver.start()]);
    proc = await spawnService({ DATABASE_URL: db.url, LOG_LEVEL: 'verbose', METRICS_TOKEN });
    base = proc.url;
  });
  afterAll(async () => {
    await proc?.stop();
    await receiver?.close();
    await db?.drop();
  });

  it('should write no key, token or secret into any line, at any level', async () => {
    // granted private networks: its callbacks go to the receiver on loopback
    const tenant = await call('/v1/keys', { method: 'POST', json: { name: 'tenant', allowPrivateNetworks: true } });
    expect(tenant.status).toBe(201);
    const key = tenant.json.key as string;
    keep(key);

    const brought = `whsec_${Buffer.from('a receiver brings its own 32-byte key').toString('base64')}`;
    keep(brought);
    const put = await call('/v1/receivers/shop', { method: 'PUT', key, json: { url: `${receiver.url}/shop`, secret: brought, eventTypes: ['order.*'] } });
    expect(put.status).toBe(201);
    keep(...put.json.secrets.map((s: { secret: string }) => s.secret));
    keep(...(await call('/v1/receivers/shop', { key })).json.secrets.map((s: { secret: string }) => s.secret));

    const customerToken = 'customer-bearer-token-5f1e2d3c';
    const customerQuery = 'customer-query-secret-9a8b7c';
    keep(customerToken, customerQuery);
    const batch = await call('/v1/batches', {
      method: 'POST',
      key,
      json: {
        callbacks: [{ receiver: 'shop', url: `${receiver.url}/hook?access_token=${customerQuery}`, headers: { Authorization: `Bearer ${customerToken}` } }],
      },
    });
    expect(batch.status).toBe(202);
    expect((await call('/v1/event-types/order.paid', { method: 'PUT', key, json: {} })).status).toBe(201);
    expect((await call('/v1/events', { method: 'POST', key, json: { type: 'order.paid', payload: { amount: 1 } } })).status).toBe(202);
    keep(...(await call(`/v1/signing-secret?destination=${encodeURIComponent(receiver.url)}`, { key })).json.secrets.map((s: { secret: string }) => s.secret));

    const minted = await call('/v1/receivers/shop/portal-sessions', { method: 'POST', key, json: { capabilities: ['replay', 'rotate', 'edit'] } });
    expect(minted.status).toBe(201);
    const token = minted.json.token as string;
    keep(token, token.split('.')[1]);
    const followed = await fetch(minted.json.url, { redirect: 'manual' });
    expect(followed.status).toBe(303);
    const cookie = followed.headers.get('set-cookie')!.split(';')[0];
    const session = await call('/portal/api/session', { key: null, headers: { cookie } });
    const csrf = session.json.csrfToken as string;
    keep(csrf);
    keep(...(await call('/portal/api/secrets', { key: null, headers: { cookie } })).json.secrets.map((s: { secret: string }) => s.secret));
    const rotated = await call('/portal/api/secrets/rotate', { method: 'POST', key: null, headers: { cookie, 'x-csrf-token': csrf } });
    expect(rotated.status).toBe(200);
    keep(...rotated.json.secrets.map((s: { secret: string }) => s.secret));
    const byApi = await call('/v1/receivers/shop/secret/rotate', { method: 'POST', key, json: {} });
    keep(...byApi.json.secrets.map((s: { secret: string }) => s.secret));
    const deliveries = await call('/portal/api/deliveries', { key: token });
    expect(deliveries.status).toBe(200);

    expect((await call('/metrics', { key: METRICS_TOKEN })).status).toBe(200);
    expect((await call(`/metrics?token=${encodeURIComponent(METRICS_TOKEN)}`, { key: null })).status).toBe(401);

    const wrongKey = 'cbk_wrong_key_of_the_log_test_000000';
    const wrongToken = `${token.slice(0, -4)}AAAA`;
    keep(wrongKey, wrongToken);
    expect((await call('/v1/batches', { key: wrongKey })).status).toBe(401);
    expect((await call('/v1/batches', { key: token })).status).toBe(401);
    expect((await call('/portal/api/session', { key: wrongToken })).status).toBe(401);
    expect((await call(`/portal/session?token=${wrongToken}`, { key: null })).status).toBe(401);
    expect((await call(`/portal/session?token=${key}`, { key: null })).status).toBe(401);
    expect((await call(`/v1/batches?api_key=${key}`, { key: null })).status).toBe(401);

    expect((await call('/v1/receivers/shop/portal-sessions', { method: 'DELETE', key })).status).toBe(200);
    const keys = await call('/v1/keys');
    const tenantId = keys.json.items.find((k: { name: string }) => k.name === 'tenant').id;
    expect((await call(`/v1/keys/${tenantId}`, { method: 'DELETE' })).status).toBeLessThan(300);
    expect((await call('/v1/batches', { key })).status).toBe(401);

    await waitFor(() => receiver.requests.length >= 2, 10_000);
    await waitFor(() => proc.output().includes('/v1/batches?api_key='), 5000);
    const out = proc.output();
    const lines = out.split('\n').filter((l) => l.startsWith('{'));
    expect(lines.length).toBeGreaterThan(40);
    expect(lines.some((l) => l.includes('"level":"trace"') || l.includes('"level":"debug"'))).toBe(true);
    expect(lines.some((l) => l.includes('/portal/session?token=[redacted]'))).toBe(true);
    for (const secret of secrets) expect({ secret: secret.slice(0, 12), logged: out.includes(secret) }).toEqual({ secret: secret.slice(0, 12), logged: false });
    for (const secret of [...secrets].filter((s) => s.startsWith('whsec_'))) expect(out).not.toContain(secret.slice('whsec_'.length));
    expect(out).not.toMatch(/(cbk|cbp|whsec)_[A-Za-z0-9+/]{6}/);
  });
});
