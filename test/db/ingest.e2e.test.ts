import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchService } from '../../src/batches/batch.service.js';
import { connect } from '../support/database.js';
import { startTestService, type TestService, jsonOf } from '../support/service.js';

describe(BatchService.name, () => {
  let service: TestService;
  let db: pg.Client;

  beforeAll(async () => {
    service = await startTestService({ role: 'api' });
    db = await connect(service.databaseUrl);
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
  });

  const post = (body: unknown, headers: Record<string, string> = {}, key?: string) => service.api('/v1/batches', { method: 'POST', json: body, headers, key });
  const count = async (table: string) => (await db.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n as number;

  it('should store 10,000 callbacks in one batch and answer with their ids in request order', async () => {
    const callbacks = Array.from({ length: 10_000 }, (_, i) => ({ url: `http://127.0.0.1:9/${i}`, externalId: `e${i}` }));
    const res = await post({ label: 'big', callbacks });
    expect(res.status).toBe(202);
    const body = (await jsonOf(res)) as { id: string; callbacks: Array<{ id: string; externalId: string }> };
    expect(body.callbacks).toHaveLength(10_000);
    expect(body.callbacks.map((c: { externalId: string }) => c.externalId)).toEqual(callbacks.map((c) => c.externalId));
    const stored = (await db.query('SELECT id, external_id, url FROM callback WHERE batch_id = $1 ORDER BY id', [body.id])).rows;
    expect(stored.map((r) => r.id)).toEqual(body.callbacks.map((c: { id: string }) => c.id));
    expect(stored.map((r) => r.url)).toEqual(callbacks.map((c) => c.url));
    const batch = await service.apiJson(`/v1/batches/${body.id}`);
    expect(batch).toMatchObject({ id: body.id, label: 'big', status: 'pending', total: 10_000, counts: { pending: 10_000 } });
    // the 202's createdAt is the stored one, as every read shows it (regression: it was the API's clock before the insert)
    expect(batch.createdAt).toBe((body as { createdAt?: string }).createdAt);
  });

  it('should store concurrent one-callback batches each with its own callback (they share statements and commits)', async () => {
    const n = 120;
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        post({ label: `one-${i}`, callbacks: [{ url: `http://127.0.0.1:9/one/${i}`, externalId: `one-${i}` }] }).then(jsonOf),
      ),
    );
    const stored = (
      await db.query(
        `SELECT b.id AS batch_id, b.label, b.total, c.id, c.url, c.external_id FROM batch b JOIN callback c ON c.batch_id = b.id
       WHERE b.label LIKE 'one-%'`,
      )
    ).rows;
    expect(stored).toHaveLength(n);
    const byBatch = new Map(stored.map((r) => [r.batch_id, r]));
    results.forEach((res, i) => {
      const row = byBatch.get(res.id);
      expect(row).toMatchObject({ label: `one-${i}`, total: 1, id: res.callbacks[0].id, url: `http://127.0.0.1:9/one/${i}`, external_id: `one-${i}` });
    });
  });

  it('should store lone surrogates in label, externalId, URL and body as U+FFFD (regression: they reach Postgres inside JSON)', async () => {
    const res = await post({ label: 'lone-\ud800', callbacks: [{ url: 'http://127.0.0.1:9/\udc00', externalId: 'x-\ud800', body: 'b-\udfff' }] });
    expect(res.status).toBe(202);
    const { id } = await jsonOf(res);
    const row = (await db.query('SELECT b.label, c.external_id, c.url, c.body FROM batch b JOIN callback c ON c.batch_id = b.id WHERE b.id = $1', [id]))
      .rows[0];
    expect(row).toEqual({ label: 'lone-\ufffd', external_id: 'x-\ufffd', url: 'http://127.0.0.1:9/\ufffd', body: 'b-\ufffd' });
  });

  describe('Idempotency-Key', () => {
    const body = { callbacks: [{ url: 'http://127.0.0.1:9/a', body: { n: 1 } }, { url: 'http://127.0.0.1:9/b' }] };

    it('should return the original batch for the same key and body', async () => {
      const first = await post(body, { 'idempotency-key': 'order-1' });
      expect(first.status).toBe(202);
      const again = await post(body, { 'idempotency-key': 'order-1' });
      expect(again.status).toBe(202);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      const [a, b] = [await jsonOf(first), await jsonOf(again)];
      expect(b.id).toBe(a.id);
      expect(b.callbacks).toEqual(a.callbacks);
      expect(b.createdAt).toBe(a.createdAt);
      expect((await db.query('SELECT count(*)::int AS n FROM batch WHERE idempotency_key = $1', ['order-1'])).rows[0].n).toBe(1);
    });

    it('should answer 409 for the same key with another body, storing nothing', async () => {
      await post(body, { 'idempotency-key': 'order-2' });
      const before = await count('callback');
      const res = await post({ callbacks: [{ url: 'http://127.0.0.1:9/other' }] }, { 'idempotency-key': 'order-2' });
      expect(res.status).toBe(409);
      expect(await jsonOf(res)).toMatchObject({ code: 'idempotency_conflict' });
      expect(await count('callback')).toBe(before);
    });

    it('should create one batch from concurrent duplicates', async () => {
      const results = await Promise.all(Array.from({ length: 8 }, () => post(body, { 'idempotency-key': 'order-3' })));
      expect(results.map((r) => r.status)).toEqual(Array(8).fill(202));
      const ids = new Set(await Promise.all(results.map(async (r) => (await jsonOf(r)).id)));
      expect(ids.size).toBe(1);
      const rows = (await db.query('SELECT id FROM batch WHERE idempotency_key = $1', ['order-3'])).rows;
      expect(rows).toHaveLength(1);
      expect((await db.query('SELECT count(*)::int AS n FROM callback WHERE batch_id = $1', [rows[0].id])).rows[0].n).toBe(2);
    });

    it('should keep keys per API key: another key may use the same Idempotency-Key', async () => {
      const other = await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'other' } });
      const mine = await jsonOf(await post(body, { 'idempotency-key': 'shared' }));
      const theirs = await jsonOf(await post(body, { 'idempotency-key': 'shared' }, other.key));
      expect(theirs.id).not.toBe(mine.id);
    });
  });

  describe('tenancy', () => {
    it("should let neither of two keys see the other's batches or callbacks", async () => {
      const alice = (await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'alice' } })).key as string;
      const bob = (await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'bob' } })).key as string;
      const a = await jsonOf(await post({ callbacks: [{ url: 'http://127.0.0.1:9/a' }] }, {}, alice));
      const b = await jsonOf(await post({ callbacks: [{ url: 'http://127.0.0.1:9/b' }] }, {}, bob));
      const as = (key: string, path: string, init: RequestInit = {}) => service.api(path, { ...init, key });

      for (const [reader, batch] of [
        [alice, b],
        [bob, a],
      ] as const) {
        expect((await as(reader, `/v1/batches/${batch.id}`)).status).toBe(404);
        expect((await as(reader, `/v1/batches/${batch.id}/callbacks`)).status).toBe(404);
        expect((await as(reader, `/v1/batches/${batch.id}/sequence`)).status).toBe(404);
        expect((await as(reader, `/v1/callbacks/${batch.callbacks[0].id}`)).status).toBe(404);
        expect((await as(reader, `/v1/callbacks/${batch.callbacks[0].id}/cancel`, { method: 'POST' })).status).toBe(404);
        expect((await as(reader, `/v1/batches/${batch.id}/retry`, { method: 'POST' })).status).toBe(404);
      }
      expect((await as(alice, `/v1/batches/${a.id}`)).status).toBe(200);
      const listA = await jsonOf(await as(alice, '/v1/batches'));
      expect(listA.items.map((x: { id: string }) => x.id)).toEqual([a.id]);
      const cbsB = await jsonOf(await as(bob, '/v1/callbacks'));
      expect(cbsB.items.map((x: { id: string }) => x.id)).toEqual([b.callbacks[0].id]);
      // Bob's cancel attempt above changed nothing of Alice's.
      expect((await jsonOf(await as(alice, `/v1/callbacks/${a.callbacks[0].id}`))).status).toBe('pending');
    });

    it('should answer 401 without a key or with a wrong or revoked one, and 403 on admin routes for a plain key', async () => {
      expect((await service.api('/v1/batches', { key: null })).status).toBe(401);
      expect((await service.api('/v1/batches', { key: 'cbk_not_a_real_key_at_all_000000' })).status).toBe(401);
      const plain = await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'plain' } });
      expect((await service.api('/v1/keys', { key: plain.key })).status).toBe(403);
      expect((await service.api('/v1/batches', { key: plain.key })).status).toBe(200);
      expect((await service.api(`/v1/keys/${plain.id}`, { method: 'DELETE' })).status).toBe(200);
      const res = await service.api('/v1/batches', { key: plain.key });
      expect(res.status).toBe(401);
      expect(await jsonOf(res)).toMatchObject({ code: 'unauthorized', requestId: expect.any(String) });
    });
  });
});
