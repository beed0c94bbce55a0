import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyService } from '../../src/auth/api-key.service.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';

/**
 * Verified keys are cached for 5 s per API process (no query per request). Revoking
 * clears the cache of the process that revoked; other processes on the same database
 * stop accepting the key once their entry expires, within those 5 s.
 */
describe(ApiKeyService.name, () => {
  let a: TestService;
  let b: TestService;

  beforeAll(async () => {
    a = await startTestService({ role: 'api' });
    b = await startTestService({ role: 'api' }, a.databaseUrl);
  });
  afterAll(async () => {
    await b?.stop();
    await a?.dispose();
  });

  it('should refuse a revoked key at once in the revoking process and within 5 s in another one that had it cached', async () => {
    const key = await a.apiJson('/v1/keys', { method: 'POST', json: { name: 'short-lived' } });
    expect((await a.api('/v1/batches', { key: key.key })).status).toBe(200);
    expect((await b.api('/v1/batches', { key: key.key })).status).toBe(200); // now cached in b
    const revokedAt = Date.now();
    expect((await a.api(`/v1/keys/${key.id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await a.api('/v1/batches', { key: key.key })).status).toBe(401);
    await waitFor(async () => (await b.api('/v1/batches', { key: key.key })).status === 401, 7_000, 100);
    expect(Date.now() - revokedAt).toBeLessThan(5_000 + 1_000);
  });
});

/**
 * Revoking a key stops what it may ask for, not what it already asked: its callbacks
 * accepted before, pending or waiting for a retry, are still sent (a key is rotated
 * out far more often than it leaks; holding them would stop a tenant's deliveries
 * unseen). To stop them, the key cancels them (POST /v1/callbacks/:id/cancel) before
 * it is revoked.
 */
describe(`${ApiKeyService.name}, with a worker`, () => {
  let service: TestService;
  let receiver: Receiver;

  beforeAll(async () => {
    service = await startTestService();
    receiver = await Receiver.start({ host: '127.0.0.10' });
  });
  afterAll(async () => {
    await service?.dispose();
    await receiver?.close();
  });

  it("should still send a revoked key's callbacks accepted before it was revoked", async () => {
    const key = await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'rotated-out', allowPrivateNetworks: true } });
    const runAt = new Date(Date.now() + 1_500).toISOString();
    const batch = await service.apiJson('/v1/batches', { method: 'POST', key: key.key, json: { callbacks: [{ url: `${receiver.url}/later`, runAt }] } });
    expect((await service.api(`/v1/keys/${key.id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await service.api(`/v1/batches/${batch.id}`, { key: key.key })).status).toBe(401);
    expect(receiver.requests).toHaveLength(0); // not due yet when the key was revoked
    const [request] = await waitFor(() => (receiver.requests.length > 0 ? receiver.requests : undefined), 10_000, 20);
    expect(request.url).toBe('/later');
    expect(request.headers['webhook-id']).toBe(batch.callbacks[0].id);
  });
});
