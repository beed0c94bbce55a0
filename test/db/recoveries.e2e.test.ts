import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RecoveryService } from '../../src/recoveries/recovery.service.js';
import { connect } from '../support/database.js';
import { Receiver } from '../support/receiver.js';
import { seedFailed } from '../support/seed.js';
import { jsonOf, startTestService, waitFor, type TestService } from '../support/service.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe(RecoveryService.name, () => {
  let service: TestService;
  let shop: Receiver;
  let elsewhere: Receiver;
  let db: pg.Client;

  beforeAll(async () => {
    // Auto-disable after 1.8 s of failures only, checked every 200 ms (the default is 120 h).
    service = await startTestService({ receiverDisableAfterHours: 0.0005, receiverCheckIntervalMs: 200, dispatchPollMs: 100 });
    [shop, elsewhere] = await Promise.all([Receiver.start({ host: '127.0.0.71' }), Receiver.start({ host: '127.0.0.74' })]);
    await shop.warmUp();
    db = await connect(service.databaseUrl);
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
    await Promise.all([shop?.close(), elsewhere?.close()]);
  });

  const put = (name: string, json: Record<string, unknown>) => service.api(`/v1/receivers/${name}`, { method: 'PUT', json });
  const recover = (json: Record<string, unknown>) => service.api('/v1/recoveries', { method: 'POST', json });
  async function send(callbacks: Array<Record<string, unknown>>): Promise<{ id: string; callbacks: Array<{ id: string }> }> {
    const res = await service.api('/v1/batches', { method: 'POST', json: { callbacks } });
    expect(res.status).toBe(202);
    return jsonOf(res);
  }
  const completed = (batchId: string) => waitFor(async () => (await service.apiJson(`/v1/batches/${batchId}`)).status === 'completed', 20_000);

  it('should send a receiver that failed, was auto-disabled and enabled again its failed callbacks of the window once more each, same webhook-id, at low priority', async () => {
    // A receiver that is broken: it answers 503 to the first two requests of each webhook-id, so its callbacks fail for
    // good after their 2 attempts (and after 1.8 s of failures it is disabled); a third request of the same id is answered 200.
    expect((await put('shop', { url: `${shop.url}/hooks?failTimes=2`, maxAttempts: 2, retryDelaysMs: [50] })).status).toBe(201);
    expect((await put('other', { url: `${elsewhere.url}/other?code=503`, maxAttempts: 1 })).status).toBe(201);
    const before = await send([{ receiver: 'shop', body: '{"n":"before"}' }]);
    await completed(before.id);
    await sleep(20);
    const since = new Date().toISOString();
    const sent: Array<{ id: string; callbacks: Array<{ id: string }> }> = [];
    const others = await send([{ receiver: 'other', body: '{}' }]);
    for (let round = 0; !(await service.apiJson('/v1/receivers/shop')).disabled; round++) {
      expect(round).toBeLessThan(100);
      sent.push(await send(Array.from({ length: 5 }, (_, i) => ({ receiver: 'shop', body: JSON.stringify({ round, i }) }))));
      await sleep(150);
    }
    sent.push(await send([{ receiver: 'shop', body: '{"n":"held"}' }]));
    await completed(others.id);
    const last = sent.at(-1)!.callbacks[0].id;
    await waitFor(async () => (await service.apiJson(`/v1/callbacks/${last}`)).waiting?.reason === 'receiver_disabled', 10_000);

    // enabled again: what it held goes (and fails too); the failed ones wait for a recovery
    expect((await put('shop', { disabled: false })).status).toBe(200);
    for (const b of sent) await completed(b.id);
    const states = await Promise.all(sent.flatMap((b) => b.callbacks).map(({ id }) => service.apiJson(`/v1/callbacks/${id}`)));
    const failed = states.filter((c) => c.status === 'failed').map((c) => c.id as string);
    expect(failed.length).toBe(states.length);
    const arrivedBefore = new Map(failed.map((id) => [id, shop.byId(id).length]));
    const preview = await jsonOf(await service.api('/v1/recoveries/preview', { method: 'POST', json: { receiver: 'shop', since } }));
    expect(preview).toEqual({ matched: failed.length });
    // regression: a window from before 1970 made an id above every other, and matched nothing
    const since1969 = { receiver: 'shop', since: '1969-12-31T23:59:59Z' };
    const all = await jsonOf(await service.api('/v1/recoveries/preview', { method: 'POST', json: { receiver: 'shop' } }));
    expect(all.matched).toBeGreaterThanOrEqual(failed.length);
    expect(await jsonOf(await service.api('/v1/recoveries/preview', { method: 'POST', json: since1969 }))).toEqual(all);

    const started = await recover({ receiver: 'shop', since });
    expect(started.status).toBe(202);
    const recovery = await jsonOf(started);
    expect(recovery).toMatchObject({ id: expect.any(String), matched: failed.length, receiver: 'shop', priority: 'low', status: ['failed'] });
    const done = await waitFor(async () => {
      const r = await service.apiJson(`/v1/recoveries/${recovery.id}`);
      return r.state === 'done' && r.delivered === failed.length ? r : undefined;
    }, 20_000);
    expect(done).toMatchObject({ requeued: failed.length, delivered: failed.length, failed: 0, pending: 0, finishedAt: expect.any(String) });

    for (const id of failed) {
      expect(shop.byId(id).length, id).toBe(arrivedBefore.get(id)! + 1);
      const c = await service.apiJson(`/v1/callbacks/${id}`);
      expect(c).toMatchObject({ status: 'succeeded', priority: 'low', attemptCount: 3 });
      expect(c.attempts.at(-1)).toMatchObject({ number: 3, statusCode: 200 });
    }
    // outside the window, or another receiver's: untouched
    expect(shop.byId(before.callbacks[0].id)).toHaveLength(2);
    expect((await service.apiJson(`/v1/callbacks/${before.callbacks[0].id}`)).status).toBe('failed');
    expect((await service.apiJson(`/v1/callbacks/${others.callbacks[0].id}`)).status).toBe('failed');
    // nothing left to recover: a second recovery matches none
    expect(await jsonOf(await recover({ receiver: 'shop', since }))).toMatchObject({ matched: 0, requeued: 0, state: 'done' });
  });

  it('should send again only the failed deliveries of the event named, and nothing that finished after it began', async () => {
    expect((await service.api('/v1/event-types/order.paid', { method: 'PUT', json: {} })).status).toBe(201);
    for (const name of ['subscriber-a', 'subscriber-b']) {
      const json = { url: `${shop.url}/${name}?failTimes=1`, maxAttempts: 1, eventTypes: ['order.*'] };
      expect((await put(name, json)).status).toBe(201);
    }
    const publish = async (id: string) => {
      const res = await service.api('/v1/events', { method: 'POST', json: { type: 'order.paid', id, payload: { id } } });
      expect(res.status).toBe(202);
      const event = await jsonOf(res);
      await completed(event.batchId);
      return event;
    };
    const [first, second] = [await publish('evt-r-1'), await publish('evt-r-2')];
    const deliveries = async (batchId: string) => (await service.apiJson(`/v1/batches/${batchId}/callbacks`)).items as Array<{ id: string; status: string }>;
    expect((await deliveries(first.batchId)).map((c) => c.status)).toEqual(['failed', 'failed']);

    // a delivery of the event that fails only after the recovery began (as if it failed again meanwhile) is not sent
    const [late] = await deliveries(first.batchId);
    await db.query(`UPDATE callback SET completed_at = now() + interval '1 hour' WHERE id = $1`, [late.id]);
    const recovery = await jsonOf(await recover({ event: 'evt-r-1' }));
    const done = await waitFor(async () => {
      const r = await service.apiJson(`/v1/recoveries/${recovery.id}`);
      return r.state === 'done' && r.pending === 0 ? r : undefined;
    }, 20_000);
    expect(done).toMatchObject({ batchId: first.batchId, requeued: 1, delivered: 1 });
    const statuses = new Map((await deliveries(first.batchId)).map((c) => [c.id, c.status]));
    expect(statuses.get(late.id)).toBe('failed');
    expect([...statuses.values()].sort()).toEqual(['failed', 'succeeded']);
    // the other event's deliveries: untouched
    expect((await deliveries(second.batchId)).map((c) => c.status)).toEqual(['failed', 'failed']);
    expect((await recover({ event: 'evt-r-1', batch: second.batchId })).status).toBe(400);
  });

  it('should refuse a recovery it cannot run with a 400 that says why, and store nothing', async () => {
    const tasks = async () => Number((await db.query(`SELECT count(*) AS n FROM task WHERE kind = 'recovery'`)).rows[0].n);
    const before = await tasks();
    const day = 86_400_000;
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{}, /receiver, host, batch or event, or a window/],
      [{ since: new Date(Date.now() - 32 * day).toISOString() }, /at most 31 days/],
      [{ receiver: 'shop', since: new Date(Date.now() - 1000).toISOString(), until: new Date(Date.now() - 2000).toISOString() }, /since must be before until/],
      [{ receiver: 'nobody' }, /nobody/],
      [{ batch: '0190aaaa-0000-7000-8000-000000000000' }, /not a batch of your key/],
      [{ event: 'no-such-event' }, /not an event of your key/],
      [{ receiver: 'shop', status: ['succeeded'] }, /status/],
      [{ receiver: 'shop', status: [] }, /status/],
      [{ receiver: 'shop', priority: 'urgent' }, /priority/],
      [{ receiver: 'shop', since: 'yesterday' }, /since/],
      [{ host: 'ftp://shop.example' }, /host must use http or https/],
      [{ receiver: 'shop', color: 'blue' }, /color/],
    ];
    for (const [body, message] of cases) {
      const res = await recover(body);
      const answer = await jsonOf(res);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(JSON.stringify(answer), JSON.stringify(body)).toMatch(message);
      expect((await service.api('/v1/recoveries/preview', { method: 'POST', json: body })).status).toBe(400);
    }
    expect(await tasks()).toBe(before);
    expect((await service.api('/v1/recoveries/0190aaaa-0000-7000-8000-000000000000')).status).toBe(404);
    expect((await service.api('/v1/recoveries/0190aaaa-0000-7000-8000-000000000000/cancel', { method: 'POST' })).status).toBe(404);
  });

  it('should not hold what it requeues for a receiver being enabled meanwhile (regression: held for good, the enable done)', async () => {
    expect((await put('flip', { url: 'http://127.0.0.72:9/flip', disabled: true })).status).toBe(201);
    const { receiverId } = await seedFailed(db, 'flip', 3);
    // an enable under way: the receiver's row changed, not yet committed (a PUT's transaction)
    const enabling = await connect(service.databaseUrl);
    try {
      await enabling.query('BEGIN');
      await enabling.query(`UPDATE receiver SET disabled = false, disabled_at = NULL WHERE id = $1`, [receiverId]);
      const started = recover({ receiver: 'flip' });
      await sleep(300);
      await enabling.query('COMMIT');
      expect((await started).status).toBe(202);
    } finally {
      await enabling.end();
    }
    // read as the enable left it: not held (the enable's own task had nothing to release yet)
    const { rows } = await db.query(`SELECT count(*) FILTER (WHERE held)::int AS held, count(*)::int AS n FROM callback WHERE receiver_id = $1`, [receiverId]);
    expect(rows[0]).toEqual({ held: 0, n: 3 });
  });

  it('should walk failed, then cancelled, when asked for both, and each only when asked', async () => {
    expect((await put('both', { url: 'http://127.0.0.72:9/both', disabled: true })).status).toBe(201);
    const { receiverId } = await seedFailed(db, 'both', 900);
    // a third of them cancelled instead
    await db.query(`UPDATE callback SET status = 'cancelled' WHERE receiver_id = $1 AND id IN (SELECT id FROM callback WHERE receiver_id = $1 LIMIT 300)`, [
      receiverId,
    ]);
    const only = await jsonOf(await recover({ receiver: 'both', status: ['cancelled'] }));
    expect(only).toMatchObject({ matched: 300, requeued: 300, state: 'done', status: ['cancelled'] });
    await db.query(`UPDATE callback SET status = 'cancelled', held = false, completed_at = now() - interval '1 minute' WHERE recovery_id = $1`, [only.id]);
    const both = await jsonOf(await recover({ receiver: 'both', status: ['failed', 'cancelled'] }));
    const done = await waitFor(async () => {
      const r = await service.apiJson(`/v1/recoveries/${both.id}`);
      return r.state === 'done' ? r : undefined;
    }, 20_000);
    expect(done).toMatchObject({ matched: 900, requeued: 900, pending: 900 });
    const { rows } = await db.query(`SELECT status, held, count(*)::int AS n FROM callback WHERE receiver_id = $1 GROUP BY 1, 2`, [receiverId]);
    expect(rows).toEqual([{ status: 'pending', held: true, n: 900 }]);
  });

  it("should requeue a disabled receiver's callbacks as held, and stop when cancelled, what it requeued staying requeued", async () => {
    expect((await put('parked', { url: 'http://127.0.0.72:9/parked', disabled: true })).status).toBe(201);
    const n = 30_000;
    await seedFailed(db, 'parked', n);
    const started = await recover({ receiver: 'parked', priority: 'normal' });
    expect(started.status).toBe(202);
    const recovery = await jsonOf(started);
    expect(recovery).toMatchObject({ matched: n, state: 'running', priority: 'normal' });
    expect(recovery.requeued).toBeLessThan(n);

    const cancelled = await jsonOf(await service.api(`/v1/recoveries/${recovery.id}/cancel`, { method: 'POST' }));
    expect(cancelled).toMatchObject({ state: 'cancelled', finishedAt: expect.any(String) });
    await sleep(500); // a chunk under way when it was cancelled has committed by now; none starts after
    const after = await service.apiJson(`/v1/recoveries/${recovery.id}`);
    expect(after.requeued).toBe(cancelled.requeued);
    expect(after.requeued).toBeLessThan(n);
    const { rows } = await db.query(
      `SELECT status, held, priority, count(*)::int AS n FROM callback c JOIN receiver r ON r.id = c.receiver_id WHERE r.name = 'parked'
       GROUP BY 1, 2, 3 ORDER BY 1`,
    );
    expect(rows).toEqual([
      { status: 'failed', held: false, priority: 1, n: n - after.requeued },
      { status: 'pending', held: true, priority: 1, n: after.requeued },
    ]);
    expect(after).toMatchObject({ pending: after.requeued, delivered: 0 });
    const again = await service.api(`/v1/recoveries/${recovery.id}/cancel`, { method: 'POST' });
    expect(again.status).toBe(409);
  });
});
