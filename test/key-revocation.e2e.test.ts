import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyService } from '../src/auth/api-key.service.js';
import { startTestService, waitFor, type TestService } from './support/service.js';

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
