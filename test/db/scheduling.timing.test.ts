import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProducerService } from '../../src/dispatch/producer.service.js';
import { Receiver } from '../support/receiver.js';
import { jsonOf, startTestService, waitFor, type TestService } from '../support/service.js';

/**
 * Who goes next, on one worker whose window (not the per-host caps) is the limit:
 * each key its weighted share, high priority first within a key, ordering keys one
 * at a time and in acceptance order.
 */
describe(`${ProducerService.name} scheduling`, () => {
  let service: TestService;
  const receivers: Receiver[] = [];

  beforeAll(async () => {
    service = await startTestService({ dispatchConcurrency: 40, hostMaxInFlight: 1000, retryDelaysMs: [30], retryJitterPermille: 0 });
    for (let i = 0; i < 10; i++) receivers.push(await Receiver.start({ host: `127.0.0.${10 + i}` }));
  });
  afterAll(async () => {
    await service?.dispose();
    for (const r of receivers) await r.close();
  });

  async function newKey(name: string, weight?: number): Promise<string> {
    const created = await service.apiJson('/v1/keys', { method: 'POST', json: { name, allowPrivateNetworks: true } });
    if (weight !== undefined) {
      const res = await service.api(`/v1/keys/${created.id}`, { method: 'PATCH', json: { weight } });
      expect(res.status).toBe(200);
      expect((await jsonOf(res)).weight).toBe(weight);
    }
    return created.key;
  }

  async function post(key: string, callbacks: unknown[], defaults?: unknown): Promise<{ id: string; ids: string[]; at: number }> {
    const res = await service.api('/v1/batches', { method: 'POST', key, json: { callbacks, defaults } });
    expect(res.status).toBe(202);
    const body = await jsonOf(res);
    return { id: body.id, ids: body.callbacks.map((c: { id: string }) => c.id), at: Date.now() };
  }

  const arrivals = (ids: Iterable<string>) => {
    const want = new Set(ids);
    return receivers.flatMap((r) => r.requests).filter((q) => want.has(String(q.headers['webhook-id'])) && q.url.includes('ok'));
  };
  const done = (ids: string[]) => waitFor(() => arrivals(ids).length >= ids.length, 30_000, 5);
  const spread = (n: number, path: string) => Array.from({ length: n }, (_, i) => ({ url: `${receivers[i % receivers.length].url}/${path}/${i}` }));

  it("should send a small tenant's callbacks at once while another tenant's backlog drains", async () => {
    const a = await newKey('tenant-a');
    const b = await newKey('tenant-b');
    const flood = await post(a, spread(3000, 'ok/a?sleep=5'));
    await waitFor(() => arrivals(flood.ids).length > 200, 10_000, 5); // A is draining
    const small = await post(
      b,
      Array.from({ length: 10 }, (_, i) => ({ url: `${receivers[9].url}/ok/b/${i}` })),
    );
    await done(small.ids);
    const lastB = Math.max(...arrivals(small.ids).map((q) => q.arrivedAt));
    const aSoFar = arrivals(flood.ids).length;
    console.log(`tenant B's 10 callbacks all arrived ${Math.round(lastB - small.at)} ms after the 202; tenant A had ${aSoFar} of 3000 delivered then`);
    // Oldest first, B would wait for all of A's 3,000 (seconds at this window).
    expect(lastB - small.at).toBeLessThan(400);
    expect(aSoFar).toBeLessThan(2250);
    await done(flood.ids);
  });

  it('should share the window 3:1 between keys of weights 3 and 1 while both have due callbacks', async () => {
    const heavy = await newKey('weight-3', 3);
    const light = await newKey('weight-1', 1);
    const h = await post(heavy, spread(2000, 'ok/h?sleep=5'));
    const l = await post(light, spread(2000, 'ok/l?sleep=5'));
    // Count from the moment both keys are sending: the heavy key's head start (its batch
    // was posted first, and its claims began before the light batch was stored) is not a share.
    await waitFor(() => arrivals(l.ids).length >= 50, 30_000, 5);
    const [h0, l0] = [arrivals(h.ids).length, arrivals(l.ids).length];
    await waitFor(() => arrivals([...h.ids, ...l.ids]).length >= h0 + l0 + 1200, 30_000, 5);
    const [nh, nl] = [arrivals(h.ids).length - h0, arrivals(l.ids).length - l0];
    console.log(`weights 3:1: ${nh} and ${nl} delivered while both were due (${(nh / nl).toFixed(2)}:1)`);
    expect(nh / nl).toBeGreaterThan(2.5);
    expect(nh / nl).toBeLessThan(3.6);
    await done([...h.ids, ...l.ids]);
  });

  it('should send high priority callbacks before the low ones posted earlier, and still move low ones', async () => {
    const key = await newKey('priorities');
    const low = await post(key, spread(1500, 'ok/low?sleep=5'), { priority: 'low' });
    await waitFor(() => arrivals(low.ids).length > 100, 10_000, 5);
    const high = await post(key, spread(20, 'ok/high'), { priority: 'high' });
    await done(high.ids);
    const lastHigh = Math.max(...arrivals(high.ids).map((q) => q.arrivedAt));
    const lowSoFar = arrivals(low.ids).length;
    console.log(`20 high callbacks arrived within ${Math.round(lastHigh - high.at)} ms, ${lowSoFar} of 1500 low ones delivered then`);
    expect(lastHigh - high.at).toBeLessThan(400);
    expect(lowSoFar).toBeLessThan(1200);
    const view = await service.apiJson(`/v1/callbacks/${high.ids[0]}`, { key });
    expect(view.priority).toBe('high');
    await done(low.ids);
  });

  it('should deliver an ordering key one at a time in acceptance order through retries, other keys in parallel', async () => {
    const key = await newKey('ordering');
    // 4 ordering keys × 8, across two batches; every third callback answers 503 once first.
    const make = (batch: number) =>
      Array.from({ length: 16 }, (_, i) => ({
        url: `${receivers[i % 4].url}/ok/ord/${batch}/${i}?sleep=20${i % 3 === 0 ? '&failTimes=1' : ''}`,
        orderingKey: `order-${i % 4}`,
      }));
    const first = await post(key, make(0));
    const second = await post(key, make(1));
    const all = [...first.ids, ...second.ids];
    await done(all);
    const orderingOf = new Map(all.map((id, i) => [id, `order-${i % 4}`]));
    const received = receivers.flatMap((r) => r.requests).filter((q) => orderingOf.has(String(q.headers['webhook-id'])));
    const end = (q: (typeof received)[number]) => q.startedAt + (q.handledMs ?? 0);
    for (let k = 0; k < 4; k++) {
      const inOrder = all.filter((id) => orderingOf.get(id) === `order-${k}`);
      const requestsOf = (id: string) => received.filter((q) => q.headers['webhook-id'] === id);
      for (let i = 1; i < inOrder.length; i++) {
        // Every request of the next one came after the last request of the one before it ended.
        const before = Math.max(...requestsOf(inOrder[i - 1]).map(end));
        const next = Math.min(...requestsOf(inOrder[i]).map((q) => q.arrivedAt));
        expect(next, `order-${k}: callback ${i} started before callback ${i - 1} finished`).toBeGreaterThanOrEqual(before - 1);
      }
      if (k === 0) expect(requestsOf(inOrder[0])).toHaveLength(2); // its 503 was retried, and held the rest meanwhile
    }
    // Different ordering keys overlapped.
    const spans = received.map((q) => [q.arrivedAt, q.startedAt + (q.handledMs ?? 0)]);
    const overlapping = spans.some(([s, e], i) => spans.some(([s2], j) => j !== i && s2 > s && s2 < e));
    expect(overlapping).toBe(true);
  });

  it('should say why a pending callback waits: not due, or behind an earlier one of its ordering key', async () => {
    const key = await newKey('reasons');
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const { ids } = await post(key, [
      { url: `${receivers[0].url}/ok/r/0`, orderingKey: 'invoice-7', runAt: later },
      { url: `${receivers[0].url}/ok/r/1`, orderingKey: 'invoice-7' },
    ]);
    const [head, next] = await Promise.all(ids.map((id) => service.apiJson(`/v1/callbacks/${id}`, { key })));
    expect(head.waiting).toMatchObject({ reason: 'not_due' });
    expect(next.orderingKey).toBe('invoice-7');
    expect(next.waiting).toEqual({ reason: 'ordering', detail: `behind callback ${ids[0]} of its ordering key`, callbackId: ids[0] });
    expect((await service.api(`/v1/callbacks/${ids[0]}/cancel`, { method: 'POST', key })).status).toBe(200);
    await done([ids[1]]);
    expect((await service.apiJson(`/v1/callbacks/${ids[1]}`, { key })).waiting).toBeNull();
  });

  it('should refuse a bad priority, ordering key or weight with 400 and store nothing', async () => {
    const key = await newKey('bad-input');
    for (const json of [
      { callbacks: [{ url: `${receivers[0].url}/ok`, priority: 'urgent' }] },
      { callbacks: [{ url: `${receivers[0].url}/ok`, orderingKey: '' }] },
      { callbacks: [{ url: `${receivers[0].url}/ok`, orderingKey: 'x'.repeat(201) }] },
      { defaults: { priority: 3 }, callbacks: [{ url: `${receivers[0].url}/ok` }] },
    ]) {
      const res = await service.api('/v1/batches', { method: 'POST', key, json });
      expect({ json, status: res.status }).toEqual({ json, status: 400 });
    }
    expect((await service.apiJson('/v1/batches', { key })).items).toEqual([]);
    const keys = await service.apiJson('/v1/keys');
    const id = keys.items.find((k: { name: string }) => k.name === 'bad-input').id;
    for (const weight of [0, 1001, 1.5, '2']) {
      expect((await service.api(`/v1/keys/${id}`, { method: 'PATCH', json: { weight } })).status).toBe(400);
    }
    expect((await service.api(`/v1/keys/${id}`, { method: 'PATCH', key, json: { weight: 2 } })).status).toBe(403);
  });
});
