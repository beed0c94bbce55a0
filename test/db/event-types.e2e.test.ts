import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventTypeService } from '../../src/events/event-type.service.js';
import { jsonOf, startTestService, type TestService } from '../support/service.js';

const ORDER_SCHEMA = {
  type: 'object',
  properties: { orderId: { type: 'string' }, amount: { type: 'integer', minimum: 0 } },
  required: ['orderId'],
};

describe(EventTypeService.name, () => {
  let service: TestService;
  let otherKey: string;

  beforeAll(async () => {
    service = await startTestService();
    otherKey = (await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'tenant b' } })).key;
  });
  afterAll(async () => {
    await service?.dispose();
  });

  const put = (name: string, json: Record<string, unknown>, key?: string) =>
    service.api(`/v1/event-types/${encodeURIComponent(name)}`, { method: 'PUT', json, key });
  const get = (name: string, key?: string) => service.api(`/v1/event-types/${encodeURIComponent(name)}`, { key });

  it('should create a type (201), update what is given (200), keep what is left out and clear what is null', async () => {
    const created = await put('order.paid', { description: 'an order was paid', schema: ORDER_SCHEMA });
    expect(created.status).toBe(201);
    expect(await jsonOf(created)).toMatchObject({ name: 'order.paid', description: 'an order was paid', schema: ORDER_SCHEMA, deprecated: false });

    const updated = await put('order.paid', { deprecated: true });
    expect(updated.status).toBe(200);
    expect(await jsonOf(updated)).toMatchObject({ description: 'an order was paid', schema: ORDER_SCHEMA, deprecated: true });

    const cleared = await service.apiJson('/v1/event-types/order.paid', { method: 'PUT', json: { schema: null, description: null } });
    expect(cleared).toMatchObject({ description: null, schema: null, deprecated: true });
    expect(await jsonOf(await get('order.paid'))).toMatchObject({ name: 'order.paid', schema: null, deprecated: true });
  });

  it('should refuse a schema that is not JSON Schema 2020-12, saying why, and store nothing', async () => {
    for (const schema of [{ type: 5 }, { $ref: 'https://schemas.example/order.json' }, { properties: [] }, [], 'object']) {
      const res = await put('bad.schema', { schema });
      expect(res.status, JSON.stringify(schema)).toBe(400);
      expect((await jsonOf(res)).message).toMatch(/schema/);
    }
    expect((await get('bad.schema')).status).toBe(404);
    // a valid type keeps its schema when a bad one is PUT over it
    expect((await put('order.created', { schema: ORDER_SCHEMA })).status).toBe(201);
    expect((await put('order.created', { schema: { type: 'nope' } })).status).toBe(400);
    expect((await jsonOf(await get('order.created'))).schema).toEqual(ORDER_SCHEMA);
  });

  it('should refuse a schema larger than 64 KiB with 413', async () => {
    const properties = Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`field_${i}`, { type: 'string' }]));
    const res = await put('big.schema', { schema: { type: 'object', properties } });
    expect(res.status).toBe(413);
    expect((await get('big.schema')).status).toBe(404);
  });

  it("should refuse a schema nested deeper than MAX_JSON_DEPTH (the request body's own limit)", async () => {
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 40; i++) deep = { not: deep };
    const res = await put('deep.schema', { schema: deep });
    expect(res.status).toBe(400);
    expect((await jsonOf(res)).message).toMatch(/nested deeper/);
  });

  it('should refuse names outside a-z 0-9 _ - in dot-separated parts', async () => {
    for (const name of ['Order.Paid', 'order..paid', '.order', 'order.', 'order.*', 'order paid', 'ordér']) {
      const res = await put(name, {});
      expect(res.status, name).toBe(400);
      expect((await jsonOf(res)).code).toBe('validation_failed');
    }
    expect((await put('a', {})).status).toBe(201);
    expect((await put(`${'x'.repeat(126)}.y`, {})).status).toBe(201);
  });

  it("should list a key's types in name order, paged, and keep keys apart", async () => {
    await Promise.all(['invoice.paid', 'invoice.sent', 'invoice.void'].map((n) => put(n, { description: n })));
    const first = await service.apiJson('/v1/event-types?limit=2&cursor=invoice');
    expect(first.items.map((t: { name: string }) => t.name)).toEqual(['invoice.paid', 'invoice.sent']);
    const second = await service.apiJson(`/v1/event-types?limit=2&cursor=${first.nextCursor}`);
    expect(second.items[0].name).toBe('invoice.void');

    expect((await get('invoice.paid', otherKey)).status).toBe(404);
    expect((await service.apiJson('/v1/event-types', { key: otherKey })).items).toEqual([]);
    expect((await put('invoice.paid', { description: 'theirs' }, otherKey)).status).toBe(201);
    expect((await jsonOf(await get('invoice.paid'))).description).toBe('invoice.paid');
  });

  it('should delete a type (then 404), and not delete another key’s', async () => {
    expect((await put('order.shipped', {})).status).toBe(201);
    expect((await service.api('/v1/event-types/order.shipped', { method: 'DELETE', key: otherKey })).status).toBe(404);
    const res = await service.api('/v1/event-types/order.shipped', { method: 'DELETE' });
    expect(res.status).toBe(200);
    expect(await jsonOf(res)).toEqual({ name: 'order.shipped', deleted: true });
    expect((await get('order.shipped')).status).toBe(404);
    expect((await service.api('/v1/event-types/order.shipped', { method: 'DELETE' })).status).toBe(404);
  });
});
