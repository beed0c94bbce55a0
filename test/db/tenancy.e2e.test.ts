import { createHash } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyGuard } from '../../src/auth/api-key.guard.js';
import { connect } from '../support/database.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';

/**
 * Keys and tenants: a key sees only its own rows on every route; someone else's
 * resource does not exist for it (404), and key secrets are shown once.
 */
describe(ApiKeyGuard.name, () => {
  let service: TestService;
  let receiver: Receiver;
  let db: pg.Client;
  let other: { id: string; key: string };
  let batchId: string;
  let callbackId: string;
  let destination: string;

  beforeAll(async () => {
    service = await startTestService();
    receiver = await Receiver.start();
    db = await connect(service.databaseUrl);
    other = await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'tenant b', allowPrivateNetworks: true } });
    const batch = await service.apiJson('/v1/batches', { method: 'POST', json: { label: 'tenant-a', callbacks: [{ url: `${receiver.url}/a-only` }] } });
    batchId = batch.id;
    callbackId = batch.callbacks[0].id;
    destination = receiver.url;
    await waitFor(async () => (await service.apiJson(`/v1/batches/${batchId}`)).status === 'completed');
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
    await receiver?.close();
  });

  const host = () => encodeURIComponent(destination);
  const ownerRoutes = (): Array<[string, string]> => [
    ['GET', `/v1/batches/${batchId}`],
    ['GET', `/v1/batches/${batchId}/callbacks`],
    ['GET', `/v1/batches/${batchId}/sequence`],
    ['GET', `/v1/batches/${batchId}/sequence?format=json`],
    ['GET', `/v1/callbacks/${callbackId}`],
    ['POST', `/v1/callbacks/${callbackId}/cancel`],
    ['POST', `/v1/callbacks/${callbackId}/retry`],
    ['POST', `/v1/batches/${batchId}/retry`],
  ];

  it("should answer 404 to another key on each route naming the owner's batch or callback, and change nothing", async () => {
    const before = await db.query('SELECT status, attempts FROM callback WHERE id = $1', [callbackId]);
    for (const [method, path] of ownerRoutes()) {
      const res = await service.api(path, { method, key: other.key });
      const body = (await res.json()) as { code: string };
      expect({ path, method, status: res.status, code: body.code }).toEqual({ path, method, status: 404, code: 'not_found' });
      expect(JSON.stringify(body)).not.toContain(receiver.url);
    }
    expect((await db.query('SELECT status, attempts FROM callback WHERE id = $1', [callbackId])).rows).toEqual(before.rows);
    // The owner, by contrast, sees them (so the 404s above are about tenancy).
    for (const [, path] of ownerRoutes().filter(([m]) => m === 'GET')) expect((await service.api(path)).status).toBe(200);
  });

  it("should answer each of many concurrent status reads from both keys with its own callback, or 404 for the other key's (reads share statements)", async () => {
    const third = await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'tenant c', allowPrivateNetworks: true } });
    const theirs = await service.apiJson('/v1/batches', {
      method: 'POST',
      key: third.key,
      json: { callbacks: Array.from({ length: 20 }, (_, i) => ({ url: `http://127.0.0.1:9/b/${i}`, externalId: `b-${i}` })), defaults: { maxAttempts: 1 } },
    });
    const reads = theirs.callbacks.flatMap((c: { id: string; externalId: string }) => [
      { key: third.key, id: c.id, status: 200, externalId: c.externalId },
      { key: undefined, id: c.id, status: 404 },
      { key: undefined, id: callbackId, status: 200, externalId: null },
      { key: third.key, id: callbackId, status: 404 },
    ]);
    const answers = await Promise.all(
      reads.map(async (r: { key?: string; id: string }) => {
        const res = await service.api(`/v1/callbacks/${r.id}`, { key: r.key });
        return { res, body: (await res.json()) as { id?: string; externalId?: string | null; code?: string } };
      }),
    );
    answers.forEach(({ res, body }, i) => {
      const want = reads[i];
      expect(res.status).toBe(want.status);
      if (want.status === 200) expect(body).toMatchObject({ id: want.id, externalId: want.externalId });
      else expect(body.code).toBe('not_found');
    });
  });

  it("should list and aggregate only the calling key's rows", async () => {
    const lists = [
      '/v1/batches',
      '/v1/callbacks',
      `/v1/callbacks?host=${host()}`,
      `/v1/history/latency?host=${host()}`,
      `/v1/history/latency?batch=${batchId}`,
      '/v1/history/latency',
    ];
    for (const path of lists) {
      const mine = await service.api(path);
      const theirs = await service.api(path, { key: other.key });
      expect({ path, status: theirs.status }).toEqual({ path, status: 200 });
      const [mineText, theirsText] = [await mine.text(), await theirs.text()];
      expect(JSON.parse(theirsText).items, path).toEqual([]);
      expect(JSON.parse(mineText).items.length, path).toBeGreaterThan(0);
    }
  });

  it("should not show another key's destinations or their latency under /v1/hosts", async () => {
    const mine = await service.api('/v1/hosts');
    const theirs = await service.api('/v1/hosts', { key: other.key });
    expect([mine.status, theirs.status]).toEqual([200, 200]);
    expect(await mine.text()).toContain(new URL(receiver.url).host);
    expect(await theirs.text()).not.toContain(new URL(receiver.url).host);
  });

  it('should give each key its own signing secret for the same destination', async () => {
    const q = `?destination=${encodeURIComponent(receiver.url)}`;
    const a = await service.apiJson(`/v1/signing-secret${q}`);
    const b = await service.apiJson(`/v1/signing-secret${q}`, { key: other.key });
    expect(a.secrets[0].secret).not.toBe(b.secrets[0].secret);
  });

  it('should show a new key once: high-entropy, stored as a hash, never listed', async () => {
    expect(other.key).toMatch(/^cbk_[A-Za-z0-9_-]{32}$/);
    const { rows } = await db.query('SELECT * FROM api_key WHERE id = $1', [other.id]);
    expect(rows).toHaveLength(1);
    const stored = JSON.stringify(rows[0]);
    expect(stored).not.toContain(other.key);
    expect(stored).not.toContain(other.key.slice(12));
    expect(stored).toContain(createHash('sha256').update(other.key).digest('hex'));

    const listed = await service.api('/v1/keys');
    const text = await listed.text();
    expect(listed.status).toBe(200);
    expect(text).toContain(other.id);
    expect(text).not.toContain(other.key);
    expect(text).not.toContain(createHash('sha256').update(other.key).digest('hex'));
    expect(text).not.toMatch(/"(hash|key|secret)"/);
    expect(text).not.toContain('whsec_');
  });

  it('should answer 401 for a missing, malformed, wrong or revoked key and 403 for a plain key on admin routes', async () => {
    const third = await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'to revoke', allowPrivateNetworks: true } });
    expect((await service.api('/v1/batches', { key: third.key })).status).toBe(200);
    expect((await service.api('/v1/keys', { key: other.key })).status).toBe(403);
    expect((await service.api(`/v1/keys/${third.id}`, { method: 'DELETE' })).status).toBe(200);
    const cases: Array<[string, Record<string, string>]> = [
      ['no header', {}],
      ['revoked', { authorization: `Bearer ${third.key}` }],
      ['wrong', { authorization: `Bearer ${other.key.slice(0, -1)}${other.key.endsWith('A') ? 'B' : 'A'}` }],
      ['same prefix, other secret', { authorization: `Bearer ${other.key.slice(0, 12)}${'x'.repeat(32)}` }],
      ['basic auth', { authorization: `Basic ${Buffer.from(`u:${other.key}`).toString('base64')}` }],
      ['too long', { authorization: `Bearer cbk_${'a'.repeat(5000)}` }],
      ['key in the query', {}],
    ];
    for (const [name, headers] of cases) {
      const path = name === 'key in the query' ? `/v1/batches?api_key=${other.key}` : '/v1/batches';
      const res = await service.api(path, { key: null, headers });
      const body = (await res.json()) as { code: string };
      expect({ name, status: res.status, code: body.code }).toEqual({ name, status: 401, code: 'unauthorized' });
      expect(JSON.stringify(body)).not.toContain(other.key);
    }
  });
});
