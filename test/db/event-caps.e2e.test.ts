import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventService } from '../../src/events/event.service.js';
import { connect } from '../support/database.js';
import { Receiver } from '../support/receiver.js';
import { jsonOf, startTestService, type TestService } from '../support/service.js';

/**
 * What one publish may cost the service: its fan-out (EVENT_MAX_DELIVERIES), the time a
 * type's schema patterns may take (ReDoS), and what an event no one takes leaves behind.
 * ROLE=api: no worker, so no maintenance sweep completes batches behind the test's back.
 */
describe(`${EventService.name} limits`, () => {
  const MAX = 3;
  let service: TestService;
  let db: pg.Client;
  let shop: Receiver;

  beforeAll(async () => {
    [service, shop] = await Promise.all([startTestService({ role: 'api', eventMaxDeliveries: MAX }), Receiver.start({ host: '127.0.0.6' })]);
    db = await connect(service.databaseUrl);
    await Promise.all([putType('fan.out', {}), putType('nobody.listens', {})]);
    await Promise.all(['r1', 'r2', 'r3', 'r4'].map((name, i) => putReceiver(name, { eventTypes: ['fan.*'], ...(i === 3 && { filter: { tier: 'gold' } }) })));
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
    await shop?.close();
  });

  async function putType(name: string, json: Record<string, unknown>) {
    const res = await service.api(`/v1/event-types/${name}`, { method: 'PUT', json });
    expect(res.status, name).toBe(201);
  }
  async function putReceiver(name: string, json: Record<string, unknown>) {
    const res = await service.api(`/v1/receivers/${name}`, { method: 'PUT', json: { url: `${shop.url}/${name}`, ...json } });
    expect(res.status, name).toBe(201);
  }
  const publish = (json: Record<string, unknown>) => service.api('/v1/events', { method: 'POST', json });
  const count = async (sql: string) => Number((await db.query<{ n: string }>(sql)).rows[0].n);

  it('should refuse an event that would make more than EVENT_MAX_DELIVERIES deliveries with 413, storing nothing, and take one at the cap', async () => {
    // four receivers take a gold event: one over the cap of 3
    const over = await publish({ type: 'fan.out', id: 'evt-over', payload: { tier: 'gold' } });
    expect(over.status).toBe(413);
    const body = await jsonOf(over);
    expect(body).toMatchObject({ code: 'payload_too_large', details: { deliveries: 4, max: MAX } });
    expect(body.message).toMatch(/would make 4 deliveries, more than EVENT_MAX_DELIVERIES \(3\)/);
    expect(await count('SELECT count(*) AS n FROM event')).toBe(0);
    expect(await count('SELECT count(*) AS n FROM batch')).toBe(0);
    expect(await count('SELECT count(*) AS n FROM callback')).toBe(0);
    expect((await service.apiJson('/v1/events?type=fan.out')).items).toEqual([]);

    // the cap counts what the filters let through: a silver event goes to 3, at the cap
    const atCap = await jsonOf(await publish({ type: 'fan.out', payload: { tier: 'silver' } }));
    expect(atCap.deliveries).toBe(MAX);
    expect((await service.apiJson(`/v1/callbacks?event=${atCap.id}`)).items).toHaveLength(MAX);

    // the refused id was never stored: narrowed to two receivers, it is a new event
    const narrowed = await publish({ type: 'fan.out', id: 'evt-over', payload: { tier: 'gold' }, receivers: ['r1', 'r4'] });
    expect(narrowed.status).toBe(202);
    expect(narrowed.headers.get('idempotent-replayed')).toBeNull();
    expect((await jsonOf(narrowed)).deliveries).toBe(2);
    expect(await count('SELECT count(*) AS n FROM callback')).toBe(MAX + 2);
  });

  it('should store an event no receiver takes with 0 deliveries and a batch complete at once, not an open one', async () => {
    const res = await publish({ type: 'nobody.listens', payload: { n: 1 } });
    expect(res.status).toBe(202);
    const event = await jsonOf(res);
    expect(event.deliveries).toBe(0);
    const batch = await service.apiJson(`/v1/batches/${event.batchId}`);
    expect(batch).toMatchObject({ label: 'event nobody.listens', status: 'completed', total: 0, makespanMs: null });
    expect(batch.completedAt).toBe(batch.createdAt);
    const listed = (await service.apiJson('/v1/batches?limit=100')).items.find((b: { id: string }) => b.id === event.batchId);
    expect(listed).toMatchObject({ status: 'completed', completedAt: batch.createdAt });
    // nothing open for the sweep (batch_open_idx) to find; the retention purge takes completed batches
    expect(await count(`SELECT count(*) AS n FROM batch WHERE completed_at IS NULL AND id = '${event.batchId}'`)).toBe(0);
    expect((await service.apiJson(`/v1/events/${event.id}`)).callbacks).toEqual([]);
    expect((await service.apiJson(`/v1/callbacks?event=${event.id}`)).items).toEqual([]);
  });

  it('should answer a payload against a backtracking schema pattern at once: patterns cannot stall the API (ReDoS)', async () => {
    await putType('user.named', {
      schema: { type: 'object', properties: { name: { type: 'string', pattern: '^(a+)+$' } }, patternProperties: { '^(x+x+)+y$': { type: 'integer' } } },
    });
    // V8's backtracking engine takes ~10 s for this one (doubling with each further 'a'); RE2 answers in microseconds
    const hostile = `${'a'.repeat(28)}!`;
    const started = performance.now();
    const [res, health] = await Promise.all([
      publish({ type: 'user.named', payload: { name: hostile, [`${'x'.repeat(28)}`]: 'not an integer' } }),
      service.api('/health/live', { key: null }),
    ]);
    const tookMs = performance.now() - started;
    expect(res.status).toBe(400);
    expect((await jsonOf(res)).details).toEqual({ path: '/name' });
    expect(health.status).toBe(200);
    expect(tookMs).toBeLessThan(1500);
    expect((await publish({ type: 'user.named', payload: { name: 'aaaa' } })).status).toBe(202);
  });

  it('should refuse a schema pattern that needs backtracking (lookahead, backreference) with 400 naming it, storing nothing', async () => {
    for (const pattern of ['^(?=.*\\d)\\w+$', '^(a)\\1$']) {
      const res = await service.api('/v1/event-types/look.ahead', { method: 'PUT', json: { schema: { type: 'string', pattern } } });
      expect(res.status, pattern).toBe(400);
      expect((await jsonOf(res)).message).toContain(`pattern ${JSON.stringify(pattern)} is not supported`);
    }
    const inProperties = await service.api('/v1/event-types/look.ahead', {
      method: 'PUT',
      json: { schema: { type: 'object', patternProperties: { '(?<=x)y': {} } } },
    });
    expect(inProperties.status).toBe(400);
    expect((await service.api('/v1/event-types/look.ahead')).status).toBe(404);
  });
});
