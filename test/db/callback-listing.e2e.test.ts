import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallbackController } from '../../src/callbacks/callback.controller.js';
import { connect } from '../support/database.js';
import { planNodes, type PlanNode } from '../support/plans.js';
import { CLOCK_MARGIN_MS } from '../../src/common/clock.js';
import { idFloorOfStoredSince } from '../../src/common/uuid.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';

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

  it('should list since a time exactly, seeking by the ids rather than reading every older row of the key', async () => {
    const {
      rows: [of],
    } = await db.query('SELECT api_key_id, batch_id FROM callback WHERE id = $1', [ids.failed[0]]);
    /** A UUIDv7 of `at` (SQL), as a service clock there would make it. */
    const idAt = (at: string) =>
      `encode(overlay(uuid_send(gen_random_uuid()) PLACING substring(int8send((extract(epoch FROM ${at}) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 'hex')::uuid`;
    const insert = (id: string, createdAt: string, n = 1) =>
      db.query(
        `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, timeout_ms, max_attempts, status, attempts, next_attempt_at, completed_at, created_at)
         SELECT ${id}, $1, $2, 'http://127.0.0.1:9/since', 'http://127.0.0.1:9', 'POST', 1000, 1, 'succeeded', 1, now(), now(), ${createdAt}
         FROM generate_series(1, ${n}) RETURNING id`,
        [of.batch_id, of.api_key_id],
      );
    // two days of the key's history before the window
    await insert(idAt(`now() - interval '2 days'`), `now() - interval '2 days'`, 20_000);
    await db.query('ANALYZE callback');
    const since = new Date(); // after every row of the earlier tests
    await new Promise((r) => setTimeout(r, 5));
    // stored after `since` by the server's clock, with an id of an API clock ten minutes behind it: listed
    const late = (await insert(idAt(`now() - interval '10 minutes'`), 'now()')).rows[0].id;
    // an id of an API clock ahead, stored before `since`: not listed
    await insert(idAt('now()'), `now() - interval '5 minutes'`);
    const recent = (
      await service.apiJson('/v1/batches', { method: 'POST', json: { callbacks: [{ url: 'http://127.0.0.1:9/a', runAt: '2099-01-01T00:00:00Z' }] } })
    ).callbacks[0].id;
    const { rows: expected } = await db.query('SELECT id FROM callback WHERE api_key_id = $1 AND created_at >= $2 ORDER BY id', [of.api_key_id, since]);
    expect(expected.map((r) => r.id).sort()).toEqual([late, recent].sort());
    expect(await listAll(`since=${since.toISOString()}`, 2)).toEqual(expected.map((r) => r.id));

    // The statement the repository has Prisma send (listCallbacks with since), as SQL, and without the ids' bound, once
    // the window holds enough rows for the planner to walk the primary key in order (LIMIT 100) rather than sort them.
    await insert(idAt('now()'), 'now()', 5_000);
    await db.query('ANALYZE callback');
    const read = async (bounded: boolean) => {
      const { rows } = await db.query(
        `EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM callback WHERE api_key_id = $1 AND created_at >= $2 ${bounded ? 'AND id >= $3' : ''} ORDER BY id ASC LIMIT 100`,
        [of.api_key_id, since, ...(bounded ? [idFloorOfStoredSince(since)] : [])],
      );
      const nodes = planNodes(rows[0]['QUERY PLAN'][0].Plan as PlanNode);
      return nodes.reduce((sum, n) => sum + (n['Rows Removed by Filter'] ?? 0) * (n['Actual Loops'] ?? 1), 0);
    };
    // the bound reads what was stored in the hour before `since` (the clocks' margin: the earlier tests' rows), not the days before
    const margin = Number(
      (
        await db.query('SELECT count(*) FROM callback WHERE api_key_id = $1 AND created_at >= $2 AND created_at < $3', [
          of.api_key_id,
          new Date(since.getTime() - CLOCK_MARGIN_MS),
          since,
        ])
      ).rows[0].count,
    );
    expect(await read(false)).toBeGreaterThanOrEqual(margin + 20_000); // what created_at alone reads
    expect(await read(true)).toBeLessThanOrEqual(margin + 100);
  });
});
