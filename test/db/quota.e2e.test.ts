import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PendingQuota } from '../../src/batches/pending-quota.service.js';
import { connect } from '../support/database.js';
import { startTestService, type TestService, jsonOf } from '../support/service.js';

const MAX = 100;

/** MAX_PENDING_PER_KEY through the API, no worker running (ROLE=api): what is pending stays pending. */
describe(PendingQuota.name, () => {
  let service: TestService;
  let db: pg.Client;
  let other: string;

  beforeAll(async () => {
    service = await startTestService({ role: 'api', maxPendingPerKey: MAX });
    db = await connect(service.databaseUrl);
    other = (await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'other' } })).key;
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
  });

  const post = (n: number, init: { key?: string; headers?: Record<string, string> } = {}) =>
    service.api('/v1/batches', {
      method: 'POST',
      key: init.key,
      headers: init.headers,
      json: { callbacks: Array.from({ length: n }, (_, i) => ({ url: `http://127.0.0.1:9/${i}` })) },
    });
  const stored = async () => (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM callback`)).rows[0].n;

  it('should refuse whole, with a 429 quota_exceeded naming the counts, a batch that would take its key past MAX_PENDING_PER_KEY', async () => {
    const first = await post(60, { headers: { 'idempotency-key': 'first' } });
    expect(first.status).toBe(202);
    const firstId = (await jsonOf(first)).id;

    const over = await post(50);
    expect(over.status).toBe(429);
    const error = await jsonOf(over);
    expect(error).toMatchObject({ code: 'quota_exceeded', details: { pending: 60, maxPending: MAX, batch: 50 } });
    expect(error.message).toMatch(/60 callbacks pending .* at most 100 \(MAX_PENDING_PER_KEY\).* nothing of it was stored/);
    expect(await stored()).toBe(60);
    expect((await db.query(`SELECT count(*)::int AS n FROM batch`)).rows[0].n).toBe(1);

    // Up to the quota exactly; then not one more.
    expect((await post(40)).status).toBe(202);
    expect((await post(1)).status).toBe(429);
    expect(await stored()).toBe(100);

    // A replay of a batch stored before answers as a replay, quota or not.
    const replay = await post(60, { headers: { 'idempotency-key': 'first' } });
    expect(replay.status).toBe(202);
    expect((await jsonOf(replay)).id).toBe(firstId);

    // Another key has its own quota.
    expect((await post(MAX, { key: other })).status).toBe(202);

    // What leaves pending frees room: ten cancelled, ten more accepted once the count is
    // taken again (a count stands for a second: PendingQuota).
    const ids = (await db.query<{ id: string }>(`SELECT id FROM callback WHERE batch_id = $1 LIMIT 10`, [firstId])).rows;
    for (const { id } of ids) expect((await service.api(`/v1/callbacks/${id}/cancel`, { method: 'POST' })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await post(11)).status).toBe(429);
    expect((await post(10)).status).toBe(202);
    expect(await stored()).toBe(100 + MAX + 10);
  });
});
