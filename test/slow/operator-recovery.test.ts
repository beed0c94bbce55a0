import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OperatorEndpointService } from '../../src/operator-events/operator-endpoint.service.js';
import { connect } from '../support/database.js';
import { Receiver } from '../support/receiver.js';
import { jsonOf, startTestService, waitFor, type TestService } from '../support/service.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Failed callbacks of `receiverId` stored straight into the database, as a down
 * endpoint leaves them (one completed batch, UUIDv7 ids of now, the url they were
 * accepted with): a backlog through real failures would take minutes.
 */
async function seedFailed(db: pg.Client, receiverId: string, url: string, n: number): Promise<string[]> {
  const {
    rows: [r],
  } = await db.query(`SELECT api_key_id FROM receiver WHERE id = $1`, [receiverId]);
  const {
    rows: [b],
  } = await db.query(`INSERT INTO batch (id, api_key_id, total, completed_at) VALUES (operator_uuidv7(), $1, $2, now()) RETURNING id`, [r.api_key_id, n]);
  const { rows } = await db.query(
    `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, headers, body, timeout_ms, max_attempts, attempts, status,
                           next_attempt_at, completed_at, receiver_id, last_error)
     SELECT operator_uuidv7(), $1, $2, $3, regexp_replace($3, '^(https?://[^/]+).*$', '\\1'), 'POST', '{}', '{}', 1000, 3, 3, 'failed',
            now() - interval '1 minute', now() - interval '1 minute', $4, 'connect_error'
     FROM generate_series(1, $5::int) AS i RETURNING id`,
    [b.id, r.api_key_id, url, receiverId, n],
  );
  await db.query('ANALYZE callback');
  return rows.map((x) => x.id);
}

/**
 * A receiver down, auto-disabled, fixed and enabled, then a recovery over its window,
 * while another key's live traffic goes on: every failed callback arrives once more
 * with its webhook-id, the live traffic keeps its rate, and the operator endpoint
 * hears each step once.
 */
describe(`${OperatorEndpointService.name}: a receiver down, disabled, enabled and recovered`, () => {
  let service: TestService;
  let shop: Receiver;
  let live: Receiver;
  let ops: Receiver;
  let db: pg.Client;
  let liveKey: string;

  beforeAll(async () => {
    // Auto-disable after 1.8 s of failures only, checked every 200 ms (the default is 120 h).
    service = await startTestService({ receiverDisableAfterHours: 0.0005, receiverCheckIntervalMs: 200, dispatchPollMs: 100 });
    [shop, live, ops] = await Promise.all([
      Receiver.start({ host: '127.0.0.81' }),
      Receiver.start({ host: '127.0.0.82' }),
      Receiver.start({ host: '127.0.0.83' }),
    ]);
    await Promise.all([shop.warmUp(), live.warmUp()]);
    db = await connect(service.databaseUrl);
    liveKey = (await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'live tenant', allowPrivateNetworks: true } })).key;
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
    await Promise.all([shop?.close(), live?.close(), ops?.close()]);
  });

  const send = async (callbacks: Array<Record<string, unknown>>, key?: string) => {
    const res = await service.api('/v1/batches', { method: 'POST', json: { callbacks }, key });
    expect(res.status).toBe(202);
    return (await jsonOf(res)) as { id: string; callbacks: Array<{ id: string }> };
  };
  const completed = (batchId: string, key?: string) =>
    waitFor(async () => (await service.apiJson(`/v1/batches/${batchId}`, { key })).status === 'completed', 30_000);
  /**
   * The live tenant's traffic, bounded: a batch of 10 callbacks every 100 ms for 6 s
   * (600), as a backend sends while things happen. Its rate: what arrived over the time
   * from the first POST to the last arrival (callbacks/s). Kept behind another key's
   * backlog, its last callbacks would arrive that much later.
   */
  const liveTraffic = async (tag: string) => {
    const started = Date.now();
    const batches: string[] = [];
    for (let i = 0; i < 60; i++) {
      const due = started + i * 100;
      if (due > Date.now()) await sleep(due - Date.now());
      batches.push(
        (
          await send(
            Array.from({ length: 10 }, (_, j) => ({ url: `${live.url}/${tag}/${i}/${j}?sleep=20` })),
            liveKey,
          )
        ).id,
      );
    }
    for (const id of batches) await completed(id, liveKey);
    const arrivals = live.requests.filter((r) => r.url.startsWith(`/${tag}/`)).map((r) => r.arrivedAt);
    expect(arrivals).toHaveLength(600);
    const until = Math.max(...arrivals);
    return { rate: arrivals.length / ((until - started) / 1000), from: started, until };
  };
  const opsOf = (type: string) => ops.requests.filter((r) => r.headers['webhook-event-type'] === type).map((r) => JSON.parse(r.body));

  it('should send every failed callback once more with its webhook-id, keep the other key at >= 0.8x its rate, and tell the endpoint each step once', async () => {
    const alone = (await liveTraffic('alone')).rate;

    expect((await service.api('/v1/operator-endpoint', { method: 'PUT', json: { url: `${ops.url}/ops` } })).status).toBe(201);
    // the endpoint is down: every first request of a webhook-id is answered 503 (the recovery's second gets 200)
    const put = await service.api('/v1/receivers/shop', { method: 'PUT', json: { url: `${shop.url}/hooks?failTimes=1`, maxAttempts: 1 } });
    expect(put.status).toBe(201);
    const shopId = (await db.query(`SELECT id FROM receiver WHERE name = 'shop'`)).rows[0].id as string;
    const since = new Date().toISOString();
    const sent: string[] = [];
    for (let round = 0; !(await service.apiJson('/v1/receivers/shop')).disabled; round++) {
      expect(round).toBeLessThan(100);
      sent.push(...(await send(Array.from({ length: 5 }, () => ({ receiver: 'shop' })))).callbacks.map((c) => c.id));
      await sleep(150);
    }
    // and what failed while it was down before the service saw it (connection refused): 2,000 more
    const seeded = await seedFailed(db, shopId, `${shop.url}/hooks`, 2000);

    // fixed and enabled; then the recovery, with the live tenant's workload at the same time
    expect((await service.api('/v1/receivers/shop', { method: 'PUT', json: { disabled: false } })).status).toBe(200);
    await waitFor(
      async () =>
        (await db.query(`SELECT count(*)::int AS n FROM callback WHERE receiver_id = $1 AND status IN ('pending', 'in_flight')`, [shopId])).rows[0].n === 0,
      20_000,
    );
    const failed = (await db.query(`SELECT id FROM callback WHERE receiver_id = $1 AND status = 'failed'`, [shopId])).rows.map((r) => r.id as string);
    expect(failed.length).toBe(sent.length + seeded.length);
    const arrivedBefore = new Map(failed.map((id) => [id, shop.byId(id).length]));
    const [during, recovery] = await Promise.all([
      liveTraffic('during'),
      (async () => {
        const res = await service.api('/v1/recoveries', { method: 'POST', json: { receiver: 'shop', since } });
        expect(res.status).toBe(202);
        return jsonOf(res);
      })(),
    ]);
    expect(recovery.matched).toBe(failed.length);
    const done = await waitFor(async () => {
      const r = await service.apiJson(`/v1/recoveries/${recovery.id}`);
      return r.state === 'done' && r.pending === 0 ? r : undefined;
    }, 60_000);
    expect(done).toMatchObject({ requeued: failed.length, delivered: failed.length, failed: 0 });
    // each failed callback once more, with its own webhook-id
    const twice = failed.filter((id) => shop.byId(id).length !== arrivedBefore.get(id)! + 1);
    expect(twice).toEqual([]);
    // the recovery's sends went on while the live traffic did (not all before or after it: how fast a recovery goes
    // depends on the machine's load, its task resting 4x each chunk's time, so at least 500 of them)
    const overlapping = shop.requests.filter((r) => r.arrivedAt >= during.from && r.arrivedAt <= during.until).length;
    console.log(
      `live tenant: ${alone.toFixed(0)} callbacks/s alone, ${during.rate.toFixed(0)}/s during the recovery of ${failed.length} ` +
        `(${(during.rate / alone).toFixed(2)}x; ${overlapping} recovered calls in its window)`,
    );
    expect(overlapping).toBeGreaterThanOrEqual(500);
    expect(during.rate / alone).toBeGreaterThanOrEqual(0.8);

    // the operator endpoint: each step once
    await waitFor(() => opsOf('recovery.completed').length >= 1, 20_000);
    await sleep(500);
    // one run of failures before the disable; the enable starts the record afresh, so what it held failing again (each
    // first request of an id fails) may be one more run, after the enable
    const [disabled] = opsOf('receiver.disabled').map((e) => e.data);
    expect(opsOf('receiver.disabled').map((e) => e.data)).toMatchObject([{ receiver: 'shop', auto: true }]);
    const runs = opsOf('receiver.failing').map((e) => e.data);
    expect(runs.filter((r) => r.failingSince < disabled.disabledAt)).toHaveLength(1);
    expect(runs.length).toBeLessThanOrEqual(2);
    expect(new Set(runs.map((r) => r.failingSince)).size).toBe(runs.length);
    expect(opsOf('receiver.enabled').map((e) => e.data.receiver)).toEqual(['shop']);
    expect(
      opsOf('callback.exhausted')
        .map((e) => e.data.callbackId)
        .sort(),
    ).toEqual([...sent].sort());
    expect(opsOf('recovery.completed').map((e) => e.data)).toMatchObject([
      { recoveryId: recovery.id, state: 'done', matched: failed.length, delivered: failed.length },
    ]);
    // the live tenant has no endpoint: nothing of its traffic was stored as an operator event
    expect((await db.query(`SELECT count(*)::int AS n FROM event e JOIN api_key k ON k.id = e.api_key_id WHERE k.name = 'live tenant'`)).rows[0].n).toBe(0);
  }, 120_000);
});
