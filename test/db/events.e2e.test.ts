import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventService } from '../../src/events/event.service.js';
import { RetentionService } from '../../src/retention/retention.service.js';
import { connect } from '../support/database.js';
import { Receiver } from '../support/receiver.js';
import { verifies } from '../support/signatures.js';
import { jsonOf, startTestService, waitFor, waitForLockWaiter, type TestService } from '../support/service.js';

const ORDER_SCHEMA = {
  type: 'object',
  properties: { orderId: { type: 'string' }, amount: { type: 'integer', minimum: 0 }, currency: { enum: ['EUR', 'USD'] } },
  required: ['orderId', 'amount'],
};

describe(EventService.name, () => {
  let service: TestService;
  let db: pg.Client;
  let shop: Receiver;
  const secrets = new Map<string, string>();

  beforeAll(async () => {
    service = await startTestService({ dispatchPollMs: 200 });
    db = await connect(service.databaseUrl);
    shop = await Receiver.start({ host: '127.0.0.4' });
    await Promise.all([
      putType('order.paid', { schema: ORDER_SCHEMA }),
      putType('order.refund.failed', {}),
      putType('invoice.paid', {}),
      putType('nobody.listens', {}),
    ]);
    // each receiver on its own path of one receiver process, each with its own secret
    await Promise.all([
      putReceiver('exact', { eventTypes: ['order.paid'] }),
      putReceiver('orders-big', { eventTypes: ['order.*'], filter: { amount: { $gte: 1000 } } }),
      putReceiver('euro-or-invoices', { eventTypes: ['invoice.*', 'order.paid'], filter: { $or: [{ currency: 'EUR' }, { invoiceId: { $exists: true } }] } }),
      putReceiver('no-events', {}),
    ]);
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
    await shop?.close();
  });

  async function putType(name: string, json: Record<string, unknown>) {
    const res = await service.api(`/v1/event-types/${name}`, { method: 'PUT', json });
    expect(res.status).toBe(201);
  }
  async function putReceiver(name: string, json: Record<string, unknown>) {
    const res = await service.api(`/v1/receivers/${name}`, { method: 'PUT', json: { url: `${shop.url}/${name}`, ...json } });
    expect([200, 201]).toContain(res.status);
    const body = await jsonOf(res);
    secrets.set(name, body.secrets[0].secret);
  }
  const publish = (json: Record<string, unknown>) => service.api('/v1/events', { method: 'POST', json });
  async function published(json: Record<string, unknown>): Promise<{ id: string; deliveries: number; batchId: string }> {
    const res = await publish(json);
    const body = await jsonOf(res);
    expect(res.status, JSON.stringify(body)).toBe(202);
    return body;
  }
  /** The receivers (by path) that got the event, once its deliveries are done. */
  async function receiversOf(eventId: string): Promise<string[]> {
    const detail = await waitFor(async () => {
      const d = await service.apiJson(`/v1/events/${eventId}`);
      return d.callbacks.every((c: { status: string }) => c.status === 'succeeded') && d;
    });
    const got = shop.requests.filter((r) => r.headers['webhook-event-id'] === eventId);
    expect(got).toHaveLength(detail.deliveries);
    return got.map((r) => r.url.slice(1)).sort();
  }

  it('should deliver one callback per subscribed receiver, each signed with its own secret only, with the event id and type in headers', async () => {
    const payload = { orderId: 'o-1', amount: 1500, currency: 'EUR' };
    const event = await published({ type: 'order.paid', payload, id: 'evt-1' });
    expect(event).toMatchObject({ id: 'evt-1', deliveries: 3 });
    expect(await receiversOf('evt-1')).toEqual(['euro-or-invoices', 'exact', 'orders-big']);
    const got = shop.requests.filter((r) => r.headers['webhook-event-id'] === 'evt-1');
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(3); // webhook-id is each delivery's own
    for (const r of got) {
      const name = r.url.slice(1);
      expect(r.headers['webhook-event-type']).toBe('order.paid');
      expect(r.headers['content-type']).toBe('application/json');
      expect(JSON.parse(r.body)).toEqual(payload);
      expect(verifies(secrets.get(name)!, r), name).toBe(true);
      for (const [other, secret] of secrets) if (other !== name) expect(verifies(secret, r), `${name} with ${other}'s secret`).toBe(false);
    }
  });

  it("should list an event's deliveries as callbacks (GET /v1/callbacks?event=), with the other filters", async () => {
    const all = await service.apiJson('/v1/callbacks?event=evt-1');
    expect(all.items.map((c: { receiver: string }) => c.receiver).sort()).toEqual(['euro-or-invoices', 'exact', 'orders-big']);
    const one = await service.apiJson('/v1/callbacks?event=evt-1&receiver=exact&status=succeeded');
    expect(one.items.map((c: { receiver: string }) => c.receiver)).toEqual(['exact']);
    expect((await service.api('/v1/callbacks?event=no-such-event')).status).toBe(404);
  });

  it.each<[string, string, Record<string, unknown>, string[]]>([
    ['exact and wildcard, filter passes', 'order.paid', { orderId: 'o', amount: 5000, currency: 'USD' }, ['exact', 'orders-big']],
    ['filter fails for the wildcard', 'order.paid', { orderId: 'o', amount: 10, currency: 'USD' }, ['exact']],
    ['$or filter passes on the first branch', 'order.paid', { orderId: 'o', amount: 10, currency: 'EUR' }, ['euro-or-invoices', 'exact']],
    ['wildcard at depth', 'order.refund.failed', { amount: 2000 }, ['orders-big']],
    ['wildcard at depth, filter fails', 'order.refund.failed', { amount: 999 }, []],
    ['invoice wildcard, $exists', 'invoice.paid', { invoiceId: 'i-1' }, ['euro-or-invoices']],
    ['invoice wildcard, $or fails', 'invoice.paid', { currency: 'USD' }, []],
    ['nobody subscribed', 'nobody.listens', { anything: true }, []],
  ])('should route by type and filter: %s', async (_, type, payload, expected) => {
    const event = await published({ type, payload });
    expect(event.deliveries).toBe(expected.length);
    expect(await receiversOf(event.id)).toEqual(expected);
  });

  it('should refuse an unknown type or a payload failing its schema with a 400 naming the path, and store nothing', async () => {
    const count = async () => Number((await db.query(`SELECT (SELECT count(*) FROM event) + (SELECT count(*) FROM callback) AS n`)).rows[0].n);
    const before = await count();
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ type: 'order.shipped', payload: {} }, /unknown event type order\.shipped/],
      [{ type: 'order.paid', payload: { amount: 5 } }, /payload must have required property 'orderId'/],
      [{ type: 'order.paid', payload: { orderId: 'o', amount: 'five' } }, /payload at \/amount must be integer/],
      [{ type: 'order.paid', payload: { orderId: 'o', amount: 1, currency: 'GBP' } }, /payload at \/currency must be equal to one of the allowed values/],
      [{ type: 'order.paid' }, /payload is required/],
      [{ type: 'Order.Paid', payload: {} }, /type: an event type name/],
      [{ type: 'order.paid', payload: { orderId: 'o', amount: 1 }, receivers: ['exact', 'ghost'] }, /unknown receiver: ghost/],
      [{ type: 'order.paid', payload: { orderId: 'o', amount: 1 }, id: 'has space' }, /id must be/],
      // text jsonb cannot store (regression: each was a 500 from the insert)
      [{ type: 'nobody.listens', payload: { a: 'x\u0000y' } }, /payload at \/a holds a NUL character or a lone UTF-16 surrogate/],
      [{ type: 'nobody.listens', payload: { list: [1, { b: '\ud800' }] } }, /payload at \/list\/1\/b holds/],
      [{ type: 'nobody.listens', payload: { 'k\u0000': 1 } }, /payload at \/k. holds/],
      [{ type: 'nobody.listens', payload: '\udc00' }, /^payload holds/],
      [{ type: 'nobody.listens', payload: 1, receivers: ['a\u0000'] }, /unknown receiver: a./],
    ];
    for (const [body, message] of cases) {
      const res = await publish(body);
      const error = await jsonOf(res);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(error.message, JSON.stringify(body)).toMatch(message);
    }
    expect((await jsonOf(await publish({ type: 'order.paid', payload: { orderId: 'o', amount: 'x' } }))).details).toEqual({ path: '/amount' });
    const big = await publish({ type: 'nobody.listens', payload: 'x'.repeat(300_000) });
    expect(big.status).toBe(413);
    expect((await jsonOf(big)).message).toMatch(/MAX_CALLBACK_BODY_BYTES/);
    expect(await count()).toBe(before);
  });

  it('should refuse with a 400 a filter, a schema, a recovery or a batch holding text Postgres cannot store (regression: each was a 500)', async () => {
    const types = Number((await db.query('SELECT count(*) FROM event_type')).rows[0].n);
    const cases: Array<[string, string, Record<string, unknown>, RegExp]> = [
      ['PUT', '/v1/receivers/nul-filter', { url: `${shop.url}/x`, eventTypes: ['order.paid'], filter: { a: 'x\u0000' } }, /filter at \/a holds a NUL/],
      ['PUT', '/v1/receivers/nul-filter', { url: `${shop.url}/x`, eventTypes: ['order.paid'], filter: { 'a\u0000': 1 } }, /filter at \/a. holds/],
      [
        'PUT',
        '/v1/receivers/nul-filter',
        { url: `${shop.url}/x`, eventTypes: ['order.paid'], filter: { a: { $in: ['\ud800'] } } },
        /filter at \/a\/\$in\/0 holds/,
      ],
      ['PUT', '/v1/event-types/nul.schema', { schema: { description: 'x\u0000' } }, /schema at \/description holds/],
      ['PUT', '/v1/event-types/nul.schema', { schema: { title: '\ud800' } }, /schema at \/title holds/],
      ['POST', '/v1/recoveries/preview', { event: 'a\u0000b' }, /event must not contain NUL/],
      ['POST', '/v1/batches', { callbacks: [{ receiver: 'a\u0000' }] }, /unknown receiver: a./],
    ];
    for (const [method, path, json, message] of cases) {
      const res = await service.api(path, { method, json });
      const error = await jsonOf(res);
      expect([path, res.status, error.code], JSON.stringify(json)).toEqual([path, 400, 'validation_failed']);
      expect(error.message, JSON.stringify(json)).toMatch(message);
    }
    expect((await service.api('/v1/receivers/nul-filter')).status).toBe(404);
    expect(Number((await db.query('SELECT count(*) FROM event_type')).rows[0].n)).toBe(types);
  });

  it('should answer a replay of an id with the first event, and a 409 for another body', async () => {
    const body = { type: 'order.paid', payload: { orderId: 'o-9', amount: 1 }, id: 'evt-replayed' };
    const first = await published(body);
    const again = await publish(body);
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await jsonOf(again)).toEqual(first);
    // at the same moment: one event, one set of deliveries
    const racing = await Promise.all([1, 2, 3].map(() => publish({ ...body, id: 'evt-raced' })));
    const answers = await Promise.all(racing.map(jsonOf));
    expect(new Set(answers.map((a) => a.batchId)).size).toBe(1);
    const conflict = await publish({ ...body, payload: { orderId: 'o-9', amount: 2 } });
    expect(conflict.status).toBe(409);
    expect((await jsonOf(conflict)).code).toBe('idempotency_conflict');
    const stored = await db.query(`SELECT event_id, deliveries FROM event WHERE event_id IN ('evt-replayed', 'evt-raced')`);
    expect(stored.rows).toHaveLength(2);
    const callbacks = await db.query(
      `SELECT count(*)::int AS n FROM callback c JOIN event e ON e.batch_id = c.batch_id WHERE e.event_id IN ('evt-replayed', 'evt-raced')`,
    );
    expect(callbacks.rows[0].n).toBe(2); // "exact" only (amount 1, no currency), once per event
    // the racers that lost stored nothing of their own either: no batch (nor callbacks) without its event
    const orphans = await db.query(
      `SELECT count(*)::int AS n FROM batch b WHERE b.label LIKE 'event %' AND NOT EXISTS (SELECT 1 FROM event e WHERE e.batch_id = b.id)`,
    );
    expect(orphans.rows[0].n).toBe(0);
  });

  it('should send only to the receivers named, and keep ordering per receiver', async () => {
    const event = await published({
      type: 'order.paid',
      payload: { orderId: 'o', amount: 5000, currency: 'EUR' },
      receivers: ['exact', 'no-events'],
      orderingKey: 'o-7',
    });
    expect(await receiversOf(event.id)).toEqual(['exact']);
    const { rows } = await db.query(`SELECT ordering_key FROM callback WHERE batch_id = $1`, [event.batchId]);
    expect(rows).toEqual([{ ordering_key: 'exact/o-7' }]);
  });

  it('should read null optional fields as left out (regression: id null was a 500, orderingKey null became "<receiver>/null")', async () => {
    const event = await published({ type: 'order.paid', payload: { orderId: 'o', amount: 1 }, id: null, orderingKey: null, receivers: null, priority: null });
    expect(event.deliveries).toBe(1);
    const { rows } = await db.query(`SELECT ordering_key, priority FROM callback WHERE batch_id = $1`, [event.batchId]);
    expect(rows).toEqual([{ ordering_key: null, priority: 1 }]);
  });

  it("should hold a receiver's deliveries when it is disabled during the fan-out, and send them once enabled", async () => {
    const names = Array.from({ length: 40 }, (_, i) => `fan-${i}`);
    await Promise.all(names.map((n) => putReceiver(n, { eventTypes: ['invoice.*'] })));
    // The disable commits after the publish looked its subscribers up (fan-7 enabled then)
    // and before it stores their deliveries: a lock on fan-7's row queues the PUT, then the
    // publish's insert (which reads the receivers FOR SHARE) behind it.
    const blocker = await connect(service.databaseUrl);
    try {
      await blocker.query('BEGIN');
      await blocker.query(`SELECT 1 FROM receiver WHERE name = 'fan-7' FOR UPDATE`);
      const disabling = service.api('/v1/receivers/fan-7', { method: 'PUT', json: { disabled: true } });
      await waitForLockWaiter(db, 'FOR UPDATE');
      const publishing = published({ type: 'invoice.paid', payload: { total: 1 } });
      await waitForLockWaiter(db, 'FOR SHARE');
      await blocker.query('COMMIT');
      expect((await disabling).status).toBe(200);
      const event = await publishing;
      expect(event.deliveries).toBe(40);
      await waitFor(
        async () => (await service.apiJson(`/v1/events/${event.id}`)).callbacks.filter((c: { status: string }) => c.status === 'succeeded').length === 39,
      );
      const detail = await service.apiJson(`/v1/events/${event.id}`);
      expect(detail.callbacks.find((c: { receiver: string }) => c.receiver === 'fan-7')).toMatchObject({ status: 'pending', held: true, attempts: 0 });
      expect(shop.requests.filter((r) => r.url === '/fan-7')).toEqual([]);
      expect((await service.api('/v1/receivers/fan-7', { method: 'PUT', json: { disabled: false } })).status).toBe(200);
      await waitFor(() => shop.requests.some((r) => r.url === '/fan-7' && r.headers['webhook-event-id'] === event.id));
    } finally {
      await blocker.end();
    }
  });

  it("should make each delivery as a batch's callback naming its receiver is made: its headers under the event's, its settings or the configured ones", async () => {
    await putType('parity.check', {});
    const settings = { headers: { 'x-tenant': 't-1', 'content-type': 'text/plain' }, timeoutMs: 4000, maxAttempts: 3, retryDelaysMs: [100, 200] };
    await Promise.all([putReceiver('tuned', { eventTypes: ['parity.check'], ...settings }), putReceiver('plain', { eventTypes: ['parity.*'] })]);
    const payload = { n: 1, s: 'é\u2028' };
    const event = await published({ type: 'parity.check', payload, orderingKey: 'k-1', priority: 'high' });
    expect(event.deliveries).toBe(2);
    const res = await service.api('/v1/batches', {
      method: 'POST',
      json: {
        callbacks: ['tuned', 'plain'].map((r) => ({
          receiver: r,
          body: payload,
          headers: { 'content-type': 'application/json' },
          orderingKey: `${r}/k-1`,
          priority: 'high',
        })),
      },
    });
    expect(res.status).toBe(202);
    const batch = await jsonOf(res);
    const columns = async (batchId: string) =>
      (
        await db.query(
          // the body each sends: its own, or its event's, stored there once (body_event_id)
          `SELECT r.name, c.url, c.host, c.method, c.headers, COALESCE(c.body, e.body) AS body, c.timeout_ms, c.max_attempts, c.retry_delays_ms,
                  c.priority, c.ordering_key, c.held, c.receiver_id
           FROM callback c JOIN receiver r ON r.id = c.receiver_id LEFT JOIN event e ON e.id = c.body_event_id
           WHERE c.batch_id = $1 ORDER BY r.name`,
          [batchId],
        )
      ).rows;
    const delivered = await columns(event.batchId);
    // the same, but for the event's own two headers (webhook-* names, which no batch may give)
    const eventHeaders = { 'webhook-event-id': event.id, 'webhook-event-type': 'parity.check' };
    expect(delivered).toEqual((await columns(batch.id)).map((c) => ({ ...c, headers: { ...c.headers, ...eventHeaders } })));
    expect(delivered.map((d) => [d.name, d.timeout_ms, d.max_attempts, d.retry_delays_ms, d.headers['x-tenant'], d.headers['content-type']])).toEqual([
      ['plain', 15000, 8, null, undefined, 'application/json'],
      ['tuned', 4000, 3, [100, 200], 't-1', 'application/json'],
    ]);
  });

  it('should publish without a subscriber deleted while the deliveries were being stored (looked up again)', async () => {
    await putType('victim.test', {});
    await Promise.all([putReceiver('victim', { eventTypes: ['victim.test'] }), putReceiver('survivor', { eventTypes: ['victim.test'] })]);
    // a delete under way: the receiver row locked and marked deleted, not committed yet
    const deleting = await connect(service.databaseUrl);
    try {
      await deleting.query('BEGIN');
      await deleting.query(`UPDATE receiver SET deleted_at = now(), name = '/deleted/' || id WHERE name = 'victim'`);
      const publishing = publish({ type: 'victim.test', payload: { n: 1 } });
      // the insert of the deliveries waits for the receiver's row (FOR SHARE), after the lookup found it
      await waitForLockWaiter(db, 'FOR SHARE');
      await deleting.query('COMMIT');
      const res = await publishing;
      const body = await jsonOf(res);
      expect(res.status, JSON.stringify(body)).toBe(202);
      expect(body.deliveries).toBe(1);
      expect(await receiversOf(body.id)).toEqual(['survivor']);
    } finally {
      await deleting.end();
    }
  });

  it('should purge an event with its batch when retention purges the batch, and keep the others', async () => {
    const old = await published({ type: 'order.paid', payload: { orderId: 'o-old', amount: 1 } });
    const kept = await published({ type: 'order.paid', payload: { orderId: 'o-new', amount: 1 } });
    await receiversOf(old.id);
    await receiversOf(kept.id);
    // finished long before RETENTION_HOURS
    // back in the queue's partition as a row finished before the history was partitioned, which the row-by-row purge takes
    await db.query(`UPDATE callback SET completed_at = now() - interval '1000 days', done_at = 'infinity' WHERE batch_id = $1`, [old.batchId]);
    await db.query(`UPDATE batch SET completed_at = now() - interval '1000 days' WHERE id = $1`, [old.batchId]);
    await service.app.get(RetentionService).purge();
    expect((await service.api(`/v1/events/${old.id}`)).status).toBe(404);
    expect((await service.apiJson(`/v1/events/${kept.id}`)).callbacks).toHaveLength(1);
  });

  it('should list events newest first by type and since, paged, and show one with its deliveries and their last errors', async () => {
    await putReceiver('broken', { eventTypes: ['nobody.listens'], maxAttempts: 1 });
    await service.api('/v1/receivers/broken', { method: 'PUT', json: { url: `${shop.url}/broken?code=500` } });
    const since = new Date().toISOString();
    const a = await published({ type: 'nobody.listens', payload: 1 });
    const b = await published({ type: 'nobody.listens', payload: [2] });
    await published({ type: 'invoice.paid', payload: { n: 3 } });
    const page = await service.apiJson(`/v1/events?type=nobody.listens&since=${encodeURIComponent(since)}&limit=1`);
    expect(page.items.map((e: { id: string }) => e.id)).toEqual([b.id]);
    expect(page.items[0]).toEqual({ id: b.id, type: 'nobody.listens', deliveries: 1, batchId: b.batchId, createdAt: expect.any(String) });
    expect((await service.apiJson(`/v1/events/${b.id}`)).payload).toEqual([2]);
    const next = await service.apiJson(`/v1/events?type=nobody.listens&since=${encodeURIComponent(since)}&limit=1&cursor=${page.nextCursor}`);
    expect(next.items.map((e: { id: string }) => e.id)).toEqual([a.id]);
    expect(next.nextCursor).toBeNull(); // exactly full, and the last
    expect((await service.apiJson(`/v1/events?since=${encodeURIComponent(since)}`)).items).toHaveLength(3);

    const failed = await waitFor(async () => {
      const d = await service.apiJson(`/v1/events/${a.id}`);
      return d.callbacks[0]?.status === 'failed' && d;
    });
    expect(failed).toMatchObject({ id: a.id, payload: 1, deliveries: 1 });
    expect(failed.callbacks[0]).toMatchObject({ receiver: 'broken', attempts: 1, lastStatusCode: 500, held: false });
    expect((await service.api('/v1/events/no-such-event')).status).toBe(404);
    expect((await service.api('/v1/events?type=Bad.Type')).status).toBe(400);
  });

  // Regression: every list gave a cursor when its page was exactly full, so the last page of n items at limit=n led to an empty one.
  it('should end every list with nextCursor null on its last page, also when that page is exactly full', async () => {
    const { batchId } = await published({ type: 'order.paid', payload: { orderId: 'o-pages', amount: 5000, currency: 'EUR' } });
    const lists = [
      '/v1/callbacks',
      '/v1/batches',
      `/v1/batches/${batchId}/callbacks`,
      '/v1/events',
      '/v1/event-types',
      '/v1/receivers',
      '/v1/receivers?sort=health',
      '/v1/hosts',
    ];
    for (const list of lists) {
      const at = (query: string) => service.apiJson(`${list}${list.includes('?') ? '&' : '?'}${query}`);
      const all = await at('limit=500');
      const n = all.items.length;
      expect([list, all.nextCursor, n > 0 && n < 500]).toEqual([list, null, true]);
      const full = await at(`limit=${n}`);
      expect([list, full.items.length, full.nextCursor]).toEqual([list, n, null]);
      if (n < 2) continue;
      const first = await at(`limit=${n - 1}`);
      expect([list, first.items.length, typeof first.nextCursor]).toEqual([list, n - 1, 'string']);
      const last = await at(`limit=${n - 1}&cursor=${encodeURIComponent(first.nextCursor)}`);
      expect([list, last.items.length, last.nextCursor]).toEqual([list, 1, null]);
      // what each item is (its state may move between the reads: deliveries are under way)
      const keys = (items: Array<{ id?: string; name?: string; host?: string }>) => items.map((i) => i.id ?? i.name ?? i.host);
      expect(keys([...first.items, ...last.items])).toEqual(keys(all.items));
    }
  });
});
