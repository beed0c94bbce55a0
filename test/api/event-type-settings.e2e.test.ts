import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventTypeService } from '../../src/events/event-type.service.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';

type Delivery = { callbackId: string; receiver: string; status: string; attempts: number };

/** Delivery settings per event type (issue 55): most specific first, the callback's, the batch's defaults, the receiver's, the type's, the service's. */
describe(`${EventTypeService.name} delivery settings`, () => {
  let service: TestService;
  let receiver: Receiver;

  beforeAll(async () => {
    service = await startTestService({ defaultMaxAttempts: 4, retryDelaysMs: [10], retryJitterPermille: 0, httpTimeoutMs: 5000 });
    receiver = await Receiver.start({ host: '127.0.0.84' });
  });
  afterAll(async () => {
    await service?.dispose();
    await receiver?.close();
  });

  const put = (path: string, json: unknown) => service.apiJson(path, { method: 'PUT', json });

  async function publish(type: string): Promise<Map<string, { delivery: Delivery; callback: Record<string, unknown> }>> {
    const event = await service.apiJson('/v1/events', { method: 'POST', json: { type, payload: { n: 1 } } });
    const deliveries = await waitFor(async () => {
      const e = await service.apiJson(`/v1/events/${event.id}`);
      return (e.callbacks as Delivery[]).every((c) => c.status === 'failed' || c.status === 'succeeded') ? (e.callbacks as Delivery[]) : undefined;
    }, 20_000);
    const out = new Map();
    for (const d of deliveries) out.set(d.receiver, { delivery: d, callback: await service.apiJson(`/v1/callbacks/${d.callbackId}`) });
    return out;
  }

  it("should apply the type's settings to its deliveries below a receiver's own and above the service's", async () => {
    const type = await put('/v1/event-types/order.slow', { timeoutMs: 300, maxAttempts: 2, retryDelaysMs: [50] });
    expect(type).toMatchObject({ name: 'order.slow', timeoutMs: 300, maxAttempts: 2, retryDelaysMs: [50] });
    await put('/v1/event-types/order.plain', {});
    // both fail every time: one answers 503, one takes longer than the type's timeout
    await put('/v1/receivers/plain', { url: `${receiver.url}/plain?code=503`, eventTypes: ['order.*'] });
    await put('/v1/receivers/own', { url: `${receiver.url}/own?code=503`, eventTypes: ['order.*'], maxAttempts: 3, retryDelaysMs: [20] });
    await put('/v1/receivers/slow', { url: `${receiver.url}/slow?sleep=1500`, eventTypes: ['order.slow'] });

    const slow = await publish('order.slow');
    expect(slow.get('plain')!.callback).toMatchObject({ maxAttempts: 2, timeoutMs: 300, attemptCount: 2, status: 'failed' });
    expect(slow.get('own')!.callback).toMatchObject({ maxAttempts: 3, timeoutMs: 300, attemptCount: 3 });
    const timedOut = slow.get('slow')!.callback as { attempts: Array<{ outcome: string; durationMs: number }> };
    expect(timedOut.attempts.map((a) => a.outcome)).toEqual(['timeout', 'timeout']);
    expect(timedOut.attempts[0].durationMs).toBeGreaterThanOrEqual(300);
    expect(timedOut.attempts[0].durationMs).toBeLessThan(1400);
    // the type's retry delay between the plain receiver's two attempts (50 ms), the receiver's own for the other (20 ms)
    const gap = (c: Record<string, unknown>) => {
      const a = c.attempts as Array<{ startedAt: string; durationMs: number }>;
      return Date.parse(a[1].startedAt) - Date.parse(a[0].startedAt) - a[0].durationMs;
    };
    expect(gap(slow.get('plain')!.callback)).toBeGreaterThanOrEqual(45);

    // a type without settings: the service's
    const plain = await publish('order.plain');
    expect(plain.get('plain')!.callback).toMatchObject({ maxAttempts: 4, timeoutMs: 5000, attemptCount: 4 });
    expect(plain.get('own')!.callback).toMatchObject({ maxAttempts: 3 });
  });

  it("should leave a batch's callbacks to the callback's, the defaults' and the receiver's settings, and clear a type's with null", async () => {
    const batch = await service.apiJson('/v1/batches', {
      method: 'POST',
      json: { defaults: { maxAttempts: 2 }, callbacks: [{ receiver: 'plain', maxAttempts: 1 }, { receiver: 'plain' }, { receiver: 'own', timeoutMs: 700 }] },
    });
    const views = await Promise.all(batch.callbacks.map((c: { id: string }) => service.apiJson(`/v1/callbacks/${c.id}`)));
    expect(views.map((v) => [v.maxAttempts, v.timeoutMs])).toEqual([
      [1, 5000],
      [2, 5000],
      [2, 700],
    ]);
    const cleared = await put('/v1/event-types/order.slow', { timeoutMs: null, maxAttempts: null, retryDelaysMs: null });
    expect(cleared).toMatchObject({ timeoutMs: null, maxAttempts: null, retryDelaysMs: [] });
    const refused = await service.api('/v1/event-types/order.slow', { method: 'PUT', json: { timeoutMs: 10_000_000 } });
    expect(refused.status).toBe(400);
  });
});
