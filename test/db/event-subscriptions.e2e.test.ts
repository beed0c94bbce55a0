import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReceiverService } from '../../src/receivers/receiver.service.js';
import { connect } from '../support/database.js';
import { jsonOf, startTestService, waitFor, type TestService } from '../support/service.js';

describe(`${ReceiverService.name} subscriptions`, () => {
  let service: TestService;
  let db: pg.Client;

  beforeAll(async () => {
    service = await startTestService();
    db = await connect(service.databaseUrl);
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
  });

  const put = (name: string, json: Record<string, unknown>) => service.api(`/v1/receivers/${name}`, { method: 'PUT', json });
  /** event_subscription's rows of the receiver, as the publish reads them. */
  const subscriptionRows = async (name: string) =>
    (
      await db.query(
        `SELECT s.pattern FROM event_subscription s JOIN receiver r ON r.id = s.receiver_id AND r.api_key_id = s.api_key_id
         WHERE r.name = $1 ORDER BY s.pattern`,
        [name],
      )
    ).rows.map((r) => r.pattern as string);

  it('should keep eventTypes and filter, show them, and mirror the types into event_subscription', async () => {
    const filter = { 'data.amount': { $gte: 100 }, $or: [{ 'data.currency': 'EUR' }, { 'data.currency': 'USD' }] };
    const created = await put('shop-1', { url: 'http://127.0.0.1:9/hooks', eventTypes: ['order.paid', 'invoice.*', 'order.paid'], filter });
    expect(created.status).toBe(201);
    expect(await jsonOf(created)).toMatchObject({ eventTypes: ['order.paid', 'invoice.*'], filter });
    expect(await subscriptionRows('shop-1')).toEqual(['invoice.*', 'order.paid']);

    // left out: kept
    expect(await jsonOf(await put('shop-1', { description: 'first shop' }))).toMatchObject({ eventTypes: ['order.paid', 'invoice.*'], filter });
    // changed: the table follows
    expect(await jsonOf(await put('shop-1', { eventTypes: ['order.*', 'invoice.*'] }))).toMatchObject({ eventTypes: ['order.*', 'invoice.*'] });
    expect(await subscriptionRows('shop-1')).toEqual(['invoice.*', 'order.*']);
    expect(await service.apiJson('/v1/receivers/shop-1')).toMatchObject({ eventTypes: ['order.*', 'invoice.*'], filter });

    // null clears both
    expect(await jsonOf(await put('shop-1', { eventTypes: null, filter: null }))).toMatchObject({ eventTypes: [], filter: null });
    expect(await subscriptionRows('shop-1')).toEqual([]);
  });

  it('should refuse a bad pattern or filter with a 400 naming where it is wrong, and change nothing', async () => {
    expect((await put('shop-2', { url: 'http://127.0.0.1:9/hooks', eventTypes: ['order.paid'], filter: { a: 1 } })).status).toBe(201);
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ eventTypes: ['order.paid', 'order*'] }, /eventTypes\[1\] must be an event type name/],
      [{ eventTypes: ['*'] }, /eventTypes\[0\]/],
      [{ eventTypes: Array.from({ length: 257 }, (_, i) => `t${i}`) }, /at most 256/],
      [{ eventTypes: 'order.paid' }, /eventTypes/],
      [{ filter: { 'data.amount': { $gt: [] } } }, /filter\["data.amount"\]\.\$gt: takes a number or a string/],
      [{ filter: { $or: [{ a: 1 }, { b: { $regex: 'x' } }] } }, /filter\.\$or\[1\]\["b"\]\.\$regex: unknown operator/],
      [{ filter: [] }, /filter: a filter is an object/],
      [{ eventTypes: ['x.*'], filter: { $and: {} } }, /filter\.\$and: takes a non-empty array/],
    ];
    for (const [body, message] of cases) {
      const res = await put('shop-2', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      const error = await jsonOf(res);
      expect(error.code).toBe('validation_failed');
      expect(error.message, JSON.stringify(body)).toMatch(message);
    }
    expect(await service.apiJson('/v1/receivers/shop-2')).toMatchObject({ eventTypes: ['order.paid'], filter: { a: 1 } });
    expect(await subscriptionRows('shop-2')).toEqual(['order.paid']);
    // a new receiver with a bad filter is not created
    expect((await put('shop-3', { url: 'http://127.0.0.1:9/hooks', filter: { $nor: [] } })).status).toBe(400);
    expect((await service.api('/v1/receivers/shop-3')).status).toBe(404);
  });

  it("should drop a deleted receiver's subscriptions with it", async () => {
    expect((await put('shop-4', { url: 'http://127.0.0.1:9/hooks', eventTypes: ['order.paid'] })).status).toBe(201);
    const { rows } = await db.query(`SELECT id FROM receiver WHERE name = 'shop-4'`);
    expect((await service.api('/v1/receivers/shop-4', { method: 'DELETE' })).status).toBe(200);
    await waitFor(async () => (await db.query(`SELECT 1 FROM event_subscription WHERE receiver_id = $1`, [rows[0].id])).rowCount === 0);
  });
});
