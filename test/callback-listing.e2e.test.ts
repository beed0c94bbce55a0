import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallbackController } from '../src/callbacks/callback.controller.js';
import { connect } from './support/database.js';
import { Receiver } from './support/receiver.js';
import { startTestService, waitFor, type TestService } from './support/service.js';

/** A UUIDv7 of the time it is made, as the service's ids are, in SQL any supported server runs (uuidv7() is Postgres 18's). */
const UUID_V7_NOW = `encode(overlay(uuid_send(gen_random_uuid()) PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 'hex')::uuid`;

type Page = { items: Array<{ id: string; status: string; url: string }>; nextCursor: string | null };

/**
 * `GET /v1/callbacks?status=`: each status lists exactly its callbacks, in id order,
 * page by page; and the lists people ask for while fixing an endpoint (failed,
 * cancelled, in flight) are read through their indexes, not by passing over every
 * succeeded row the key ever sent.
 */
describe(CallbackController.name, () => {
  let service: TestService;
  let receiver: Receiver;
  let db: pg.Client;
  const ids: Record<string, string[]> = {};

  beforeAll(async () => {
    service = await startTestService({ shutdownGraceMs: 100 }); // the hanging call is not waited for at the end
    receiver = await Receiver.start();
    db = await connect(service.databaseUrl);
    const url = (path: string) => `${receiver.url}${path}`;
    const batch = await service.apiJson('/v1/batches', {
      method: 'POST',
      json: {
        callbacks: [
          { url: url('/ok?n=1') },
          { url: url('/broken?failTimes=9&failCode=500'), maxAttempts: 1 },
          { url: url('/hang?hang=1&n=1'), timeoutMs: 30_000 },
          { url: url('/ok?n=2') },
          { url: url('/broken?failTimes=9&failCode=500&n=2'), maxAttempts: 1 },
          { url: url('/hang?hang=1&n=2'), timeoutMs: 30_000 },
          { url: url('/broken?failTimes=9&failCode=500&n=3'), maxAttempts: 1 },
        ],
      },
    });
    const [ok1, failed1, hang1, ok2, failed2, hang2, failed3] = batch.callbacks.map((c: { id: string }) => c.id);
    const settled: Record<string, string> = {
      [ok1]: 'succeeded',
      [ok2]: 'succeeded',
      [failed1]: 'failed',
      [failed2]: 'failed',
      [failed3]: 'failed',
      [hang1]: 'in_flight',
      [hang2]: 'in_flight',
    };
    for (const [id, status] of Object.entries(settled)) await waitFor(async () => (await service.apiJson(`/v1/callbacks/${id}`)).status === status);
    expect((await service.api(`/v1/callbacks/${hang2}/cancel`, { method: 'POST' })).ok).toBe(true);
    Object.assign(ids, { succeeded: [ok1, ok2], failed: [failed1, failed2, failed3], in_flight: [hang1], cancelled: [hang2] });
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
    await receiver?.close();
  });

  async function listAll(query: string, limit: number): Promise<string[]> {
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 10; page++) {
      const res: Page = await service.apiJson(`/v1/callbacks?${query}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...res.items.map((c) => c.id));
      cursor = res.nextCursor;
      if (!cursor) break;
    }
    return seen;
  }

  it('should list exactly the callbacks of each status, in id order, one page or several', async () => {
    for (const status of ['succeeded', 'failed', 'in_flight', 'cancelled']) {
      const expected = [...ids[status]].sort();
      expect({ status, ids: await listAll(`status=${status}`, 100) }).toEqual({ status, ids: expected });
      expect({ status, ids: await listAll(`status=${status}`, 1) }).toEqual({ status, ids: expected });
    }
    expect(await listAll('status=pending', 100)).toEqual([]);
    const inFlight: Page = await service.apiJson('/v1/callbacks?status=in_flight');
    expect(inFlight.items.map((c) => c.status)).toEqual(['in_flight']);
  });

  it('should read failed, cancelled and in-flight lists through their indexes among many succeeded rows', async () => {
    const {
      rows: [of],
    } = await db.query('SELECT api_key_id, batch_id FROM callback WHERE id = $1', [ids.failed[0]]);
    await db.query(
      `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, timeout_ms, max_attempts, status, attempts, next_attempt_at, completed_at)
       SELECT ${UUID_V7_NOW}, $1, $2, 'http://127.0.0.1:9/old', 'http://127.0.0.1:9', 'POST', 1000, 1, 'succeeded', 1, now(), now()
       FROM generate_series(1, 20000)`,
      [of.batch_id, of.api_key_id],
    );
    await db.query('ANALYZE callback');
    // The statement the repository has Prisma send (listCallbacks), as SQL.
    const plan = async (status: string, leaseHeld: boolean) => {
      const { rows } = await db.query(
        `EXPLAIN (FORMAT JSON) SELECT * FROM callback WHERE api_key_id = $1 AND status = $2 ${leaseHeld ? 'AND lease_expires_at IS NOT NULL' : ''}
         ORDER BY id ASC LIMIT 100`,
        [of.api_key_id, status],
      );
      return JSON.stringify(rows[0]['QUERY PLAN']);
    };
    // each partition's copy of the index (callback_live_unsuccessful_idx, callback_20261203_000000_unsuccessful_idx)
    expect(await plan('failed', false)).toMatch(/"Index Name":"callback_\w*unsuccessful_idx"/);
    expect(await plan('cancelled', false)).toMatch(/"Index Name":"callback_\w*unsuccessful_idx"/);
    expect(await plan('in_flight', true)).toMatch(/"Index Name":"callback_\w*lease_idx"/);
    for (const status of ['failed', 'in_flight']) {
      expect(await listAll(`status=${status}`, 100)).toEqual([...ids[status]].sort());
    }
  });
});
