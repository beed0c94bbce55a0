import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchRepository } from '../../src/batches/batch.repository.js';
import { EventService } from '../../src/events/event.service.js';
import { connect } from '../support/database.js';
import { jsonOf, startTestService, type TestService } from '../support/service.js';

const RECEIVERS = 200;
/** A payload of ~48 KiB that does not compress (TOAST would shrink a repetitive one): what the review published. */
const payload = () => ({ order: 'o-1', data: randomBytes(36 * 1024).toString('base64') });
const KIB = 1024;

/**
 * One event's payload is stored once, whatever its fan-out: its deliveries refer to it
 * (ROLE=api: nothing is sent, what is published stays stored). Before, each delivery
 * held its own copy: one 48 KiB event to 200 receivers grew the database by 10.1 MiB.
 */
describe(`${EventService.name} storage`, () => {
  let service: TestService;
  let db: pg.Client;

  beforeAll(async () => {
    service = await startTestService({ role: 'api', maxPendingBytesPerKey: 150 * KIB });
    db = await connect(service.databaseUrl);
    expect((await service.api('/v1/event-types/order.paid', { method: 'PUT', json: {} })).status).toBe(201);
    for (let i = 0; i < RECEIVERS; i++) {
      const res = await service.api(`/v1/receivers/shop-${i}`, { method: 'PUT', json: { url: `http://127.0.0.1:9/${i}`, eventTypes: ['order.paid'] } });
      expect(res.status).toBe(201);
    }
  }, 120_000);
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
  });

  const databaseBytes = async () => Number((await db.query(`SELECT pg_database_size(current_database()) AS n`)).rows[0].n);
  const publish = (p: unknown) => service.api('/v1/events', { method: 'POST', json: { type: 'order.paid', payload: p } });

  it('should grow the database by about one payload, not one per delivery, for a 48 KiB event to 200 receivers', async () => {
    const p = payload();
    const bytes = Buffer.byteLength(JSON.stringify(p));
    expect(bytes).toBeGreaterThan(48 * KIB);
    const before = await databaseBytes();
    const res = await publish(p);
    expect(res.status).toBe(202);
    expect((await jsonOf(res)).deliveries).toBe(RECEIVERS);
    const growth = (await databaseBytes()) - before;
    console.log(`one ${(bytes / KIB).toFixed(1)} KiB event to ${RECEIVERS} receivers grew the database by ${(growth / KIB).toFixed(0)} KiB`);
    // the payload once, 200 delivery rows with their index entries, the event and its batch: a tenth of 200 copies at most
    expect(growth).toBeLessThan((RECEIVERS * bytes) / 10);
    // every delivery still sends the payload as published
    const { rows } = await db.query(`SELECT count(*)::int AS n FROM callback WHERE api_key_id = (SELECT api_key_id FROM event LIMIT 1)`);
    expect(rows[0].n).toBe(RECEIVERS);
    const shown = await service.apiJson(`/v1/events/${(await db.query(`SELECT event_id FROM event LIMIT 1`)).rows[0].event_id}`);
    expect(shown.payload).toEqual(p);
    // and the receiver's portal shows the delivery's request with that body
    const mint = await service.apiJson('/v1/receivers/shop-7/portal-sessions', { method: 'POST', json: {} });
    const id = (await db.query(`SELECT c.id FROM callback c JOIN receiver r ON r.id = c.receiver_id WHERE r.name = 'shop-7'`)).rows[0].id;
    const delivery = await service.apiJson(`/portal/api/deliveries/${id}`, { key: mint.token });
    expect(delivery.body).toBe(JSON.stringify(p));
  });

  it('should count an event against MAX_PENDING_BYTES_PER_KEY once, whatever its deliveries, and refuse what would pass it, storing nothing', async () => {
    // 150 KiB: the first event above (~48 KiB) and two more fit; a fourth does not
    for (let i = 0; i < 2; i++) expect((await publish(payload())).status).toBe(202);
    // as the database counts them: 600 deliveries, three payloads
    const key = (await db.query(`SELECT api_key_id FROM event LIMIT 1`)).rows[0].api_key_id;
    const counted = await service.app.get(BatchRepository).countPending(key, 1_000_001);
    expect(counted.n).toBe(3 * RECEIVERS);
    const stored = (await db.query(`SELECT sum(octet_length(body))::float8 AS n FROM event`)).rows[0].n;
    expect(counted.bytes).toBe(stored);
    expect(stored).toBeLessThan(3 * 50 * KIB);
    const events = async () => (await db.query(`SELECT count(*)::int AS n FROM event`)).rows[0].n;
    const callbacks = async () => (await db.query(`SELECT count(*)::int AS n FROM callback`)).rows[0].n;
    const [e0, c0] = [await events(), await callbacks()];
    const over = await publish(payload());
    expect(over.status).toBe(429);
    const error = await jsonOf(over);
    expect(error.code).toBe('quota_exceeded');
    expect(error.message).toMatch(/MAX_PENDING_BYTES_PER_KEY/);
    expect(error.details).toMatchObject({ maxPendingBytes: 150 * KIB });
    expect([await events(), await callbacks()]).toEqual([e0, c0]);
    // a batch's bodies count too, each its own
    const batch = await service.api('/v1/batches', {
      method: 'POST',
      json: { callbacks: [{ url: 'http://127.0.0.1:9/b', body: payload() }] },
    });
    expect(batch.status).toBe(429);
    expect(await callbacks()).toBe(c0);
    // small bodies still fit
    expect((await service.api('/v1/batches', { method: 'POST', json: { callbacks: [{ url: 'http://127.0.0.1:9/b', body: { ok: 1 } }] } })).status).toBe(202);
  });
});
