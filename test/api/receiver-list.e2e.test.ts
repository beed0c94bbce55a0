import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReceiverController } from '../../src/receivers/receiver.controller.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';

interface Item {
  name: string;
  failingSince: string | null;
  health: {
    since: string;
    lastSuccessAt: string | null;
    attempts: number;
    successes: number;
    successRate: number | null;
    pending: number;
    inFlight: number;
    held: number;
  };
}

/** GET /v1/receivers: each receiver's health beside its settings, and the health order. */
describe(`${ReceiverController.name} list`, () => {
  let service: TestService;
  let shop: Receiver;

  beforeAll(async () => {
    [service, shop] = await Promise.all([startTestService(), Receiver.start()]);
    const put = (name: string, json: Record<string, unknown>) => service.api(`/v1/receivers/${name}`, { method: 'PUT', json });
    for (const [name, json] of [
      ['a-healthy', { url: `${shop.url}/ok` }],
      ['b-paused', { url: `${shop.url}/ok`, disabled: true }],
      ['c-mixed', { url: `${shop.url}/ok` }],
      ['d-down', { url: `${shop.url}/down?code=500`, maxAttempts: 1 }],
      ['e-idle', { url: `${shop.url}/ok` }],
    ] as const)
      expect((await put(name, json)).status).toBe(201);
    const send = async (callbacks: unknown[]) => {
      const res = await service.api('/v1/batches', { method: 'POST', json: { callbacks } });
      expect(res.status).toBe(202);
      return ((await res.json()) as { id: string }).id;
    };
    // d-down fails twice; c-mixed fails once, then succeeds (so it is not failing); a-healthy succeeds three times.
    const done = await send([
      ...Array.from({ length: 3 }, () => ({ receiver: 'a-healthy' })),
      { receiver: 'd-down' },
      { receiver: 'd-down' },
      { receiver: 'c-mixed', url: `${shop.url}/no?code=500`, maxAttempts: 1 },
    ]);
    await waitFor(async () => (await service.apiJson(`/v1/batches/${done}`)).status === 'completed', 15_000);
    const after = await send([{ receiver: 'c-mixed' }]);
    await waitFor(async () => (await service.apiJson(`/v1/batches/${after}`)).status === 'completed', 15_000);
    await send([{ receiver: 'b-paused' }, { receiver: 'b-paused' }]);
  });
  afterAll(async () => {
    await service?.dispose();
    await shop?.close();
  });

  const list = async (query = '') => {
    const res = await service.api(`/v1/receivers${query}`);
    expect(res.status, await res.clone().text()).toBe(200);
    return (await res.json()) as { items: Item[]; nextCursor: string | null };
  };

  it("should show each receiver's failing state, last hour's success rate, and pending and held counts", async () => {
    const before = Date.now();
    const { items } = await list();
    const by = Object.fromEntries(items.map((i) => [i.name, i]));
    expect(items.map((i) => i.name)).toEqual(['a-healthy', 'b-paused', 'c-mixed', 'd-down', 'e-idle']);
    expect(by['d-down'].failingSince).not.toBeNull();
    expect(by['d-down'].health).toMatchObject({ attempts: 2, successes: 0, successRate: 0, lastSuccessAt: null, pending: 0, held: 0 });
    expect(by['c-mixed'].failingSince).toBeNull();
    expect(by['c-mixed'].health).toMatchObject({ attempts: 2, successes: 1, successRate: 0.5 });
    expect(by['c-mixed'].health.lastSuccessAt).not.toBeNull();
    expect(by['a-healthy'].health).toMatchObject({ attempts: 3, successes: 3, successRate: 1, pending: 0, inFlight: 0, held: 0 });
    expect(by['b-paused'].health).toMatchObject({ attempts: 0, successRate: null, pending: 0, held: 2 });
    expect(by['e-idle'].health).toMatchObject({ attempts: 0, successRate: null, lastSuccessAt: null, pending: 0, held: 0 });
    const since = Date.parse(by['e-idle'].health.since);
    expect(since).toBeGreaterThan(before - 3_600_000 - 5000);
    expect(since).toBeLessThanOrEqual(Date.now() - 3_600_000);
  });

  it('should sort by health: the failing receiver first, then the rest by name, page by page with the same cursor', async () => {
    const whole = await list('?sort=health');
    expect(whole.items.map((i) => i.name)).toEqual(['d-down', 'a-healthy', 'b-paused', 'c-mixed', 'e-idle']);
    const names: string[] = [];
    let cursor: string | null = '';
    for (let pages = 0; cursor !== null && pages < 10; pages++) {
      const page = await list(`?sort=health&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      names.push(...page.items.map((i) => i.name));
      cursor = page.nextCursor;
    }
    expect(names).toEqual(whole.items.map((i) => i.name));
    const byName = await list('?limit=2');
    expect(byName.nextCursor).toBe('b-paused');
    expect((await list(`?limit=2&cursor=${byName.nextCursor}`)).items.map((i) => i.name)).toEqual(['c-mixed', 'd-down']);
  });

  it('should answer 400 to an unknown sort or a cursor that no page gave', async () => {
    const healthCursor = (await list('?sort=health&limit=1')).nextCursor!;
    for (const query of [
      '?sort=worst',
      '?sort=health&cursor=nope',
      '?sort=health&cursor=yesterday%2Fa-healthy',
      '?sort=health&cursor=2026-12-03T10%3A00%3A00Z%2Fa-healthy',
      `?sort=health&cursor=${encodeURIComponent(healthCursor.replace(/\/.*/, '/'))}`,
      `?cursor=${encodeURIComponent(healthCursor)}`,
    ]) {
      const res = await service.api(`/v1/receivers${query}`);
      expect(res.status, query).toBe(400);
      expect(((await res.json()) as { code: string }).code, query).toBe('validation_failed');
    }
  });
});
