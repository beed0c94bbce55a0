import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PayloadCheckPool } from '../../src/events/payload-check.pool.js';
import { connect, createTestDatabase, type TestDatabase } from '../support/database.js';
import { spawnService, type ServiceProcess } from '../support/process.js';
import { Receiver } from '../support/receiver.js';
import { jsonOf, TEST_KEY } from '../support/service.js';

const BUDGET_MS = 500;
/** 12,000 distinct objects, ~140 KB as JSON: under uniqueItems, ~72 million comparisons. */
const MANY = Array.from({ length: 12_000 }, (_, i) => ({ a: i }));

/**
 * A schema can cost time quadratic in the payload (`uniqueItems` over objects compares
 * every pair): the review's attack, a type with {"type":"array","uniqueItems":true} and
 * one ~130 KB publish of 12,000 objects, held the API's event loop for seconds. Checks
 * now run on threads of their own with a budget: meanwhile `/health/live` answers at
 * once, and the publish is refused when its budget runs out, storing nothing. The
 * service runs as a process of its own (dist/main.js: `npm run build` first), so what
 * holds its event loop is its own work, not this test's.
 */
describe(`${PayloadCheckPool.name} through the API`, () => {
  let database: TestDatabase;
  let service: ServiceProcess;
  let db: pg.Client;
  let receiver: Receiver;

  /** A request to the service with the test key; `body` already JSON, so this process does no work of its own meanwhile. */
  const send = (path: string, method = 'GET', body?: string) =>
    fetch(`${service.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${TEST_KEY}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body,
    });

  beforeAll(async () => {
    database = await createTestDatabase();
    db = await connect(database.url);
    service = await spawnService({ DATABASE_URL: database.url, EVENT_CHECK_BUDGET_MS: String(BUDGET_MS) });
    receiver = await Receiver.start({ host: '127.0.0.9' });
    const type = JSON.stringify({ schema: { type: 'array', uniqueItems: true } });
    expect((await send('/v1/event-types/list.unique', 'PUT', type)).status).toBe(201);
    const shop = JSON.stringify({ url: `${receiver.url}/shop`, eventTypes: ['list.unique'] });
    expect((await send('/v1/receivers/shop', 'PUT', shop)).status).toBe(201);
    // a process in use has run its intake before: one publish of the same size to a type without a schema
    const any = await send('/v1/event-types/list.any', 'PUT', '{}');
    expect(any.status, await any.clone().text()).toBe(201);
    const warm = await send('/v1/events', 'POST', JSON.stringify({ type: 'list.any', payload: MANY }));
    expect(warm.status, await warm.clone().text()).toBe(202);
  });
  afterAll(async () => {
    await service?.stop();
    await db?.end();
    await receiver?.close();
    await database?.drop();
  });

  /** `/health/live` asked every 20 ms while `work` runs: the slowest answer. */
  async function slowestLive<T>(work: Promise<T>): Promise<{ slowest: number; result: T }> {
    let slowest = 0;
    let done = false;
    const probing = (async () => {
      while (!done) {
        const t = performance.now();
        const res = await fetch(`${service.url}/health/live`);
        await res.arrayBuffer();
        expect(res.status).toBe(200);
        slowest = Math.max(slowest, performance.now() - t);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const result = await work.finally(() => (done = true));
    await probing;
    return { slowest, result };
  }

  const count = async (sql: string) => (await db.query(sql)).rows[0].n as number;

  it('should keep /health/live within 100 ms while a 130 KB publish of 12,000 objects meets uniqueItems, and refuse it within its budget, storing nothing', async () => {
    const publish = JSON.stringify({ type: 'list.unique', payload: MANY });
    expect(publish.length).toBeGreaterThan(130_000);
    const before = await count('SELECT count(*)::int AS n FROM callback');
    const started = performance.now();
    const { slowest, result: res } = await slowestLive(send('/v1/events', 'POST', publish));
    const took = performance.now() - started;
    const body = await jsonOf(res);
    console.log(`publish answered ${res.status} after ${took.toFixed(0)} ms; slowest /health/live meanwhile ${slowest.toFixed(1)} ms`);
    expect([res.status, body.code]).toEqual([400, 'validation_failed']);
    expect(body.message).toMatch(/within 500 ms \(EVENT_CHECK_BUDGET_MS\)/);
    expect(took).toBeLessThan(BUDGET_MS + 2000);
    expect(slowest).toBeLessThan(100);
    expect(await count(`SELECT count(*)::int AS n FROM event WHERE type = 'list.unique'`)).toBe(0);
    expect(await count('SELECT count(*)::int AS n FROM callback')).toBe(before);
  });

  it('should still validate what fits the budget: a duplicate is a 400 naming it, distinct items are published', async () => {
    const dup = await send('/v1/events', 'POST', JSON.stringify({ type: 'list.unique', payload: [{ a: 1 }, { a: 2 }, { a: 1 }] }));
    expect(dup.status).toBe(400);
    const dupBody = await jsonOf(dup);
    expect(dupBody.message, JSON.stringify(dupBody)).toMatch(/duplicate items/);
    const ok = await send('/v1/events', 'POST', JSON.stringify({ type: 'list.unique', payload: [{ a: 1 }, { a: 2 }] }));
    expect(ok.status).toBe(202);
    expect((await jsonOf(ok)).deliveries).toBe(1);
  });
});
