import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallbackService } from '../../src/callbacks/callback.service.js';
import { Receiver, closedPort } from '../support/receiver.js';
import { startTestService, waitFor, type TestService, jsonOf } from '../support/service.js';

describe(`${CallbackService.name} retries`, () => {
  let service: TestService;
  let receiver: Receiver;

  beforeAll(async () => {
    service = await startTestService({ dispatchPollMs: 100 });
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    await service?.dispose();
    await receiver?.close();
  });

  async function send(callbacks: unknown[], defaults: Record<string, unknown> = {}) {
    const res = await service.api('/v1/batches', { method: 'POST', json: { callbacks, defaults } });
    expect(res.status).toBe(202);
    return (await jsonOf(res)) as { id: string; callbacks: Array<{ id: string }> };
  }
  const callback = (id: string) => service.apiJson(`/v1/callbacks/${id}`);
  const settled = (id: string, timeoutMs = 10_000) =>
    waitFor(async () => {
      const c = await callback(id);
      return ['succeeded', 'failed', 'cancelled'].includes(c.status) ? c : undefined;
    }, timeoutMs);

  it('should retry a 503 with the given delays, then succeed, keeping every attempt', async () => {
    const { callbacks } = await send([{ url: `${receiver.url}/flaky?failTimes=2&failCode=503` }], { retryDelaysMs: [150, 300], maxAttempts: 5 });
    const c = await settled(callbacks[0].id);
    expect(c.status).toBe('succeeded');
    expect(c.attempts.map((a: { statusCode: number }) => a.statusCode)).toEqual([503, 503, 200]);
    expect(c.attempts.map((a: { number: number }) => a.number)).toEqual([1, 2, 3]);
    const seen = receiver.byId(callbacks[0].id).map((r) => r.arrivedAt);
    expect(seen).toHaveLength(3);
    // ±20% jitter on 150 ms and 300 ms, plus dispatch latency.
    expect(seen[1] - seen[0]).toBeGreaterThanOrEqual(110);
    expect(seen[1] - seen[0]).toBeLessThan(600);
    expect(seen[2] - seen[1]).toBeGreaterThanOrEqual(230);
    expect(seen[2] - seen[1]).toBeLessThan(800);
  });

  it('should honour Retry-After', async () => {
    const { callbacks } = await send([{ url: `${receiver.url}/busy?failTimes=1&failCode=429&retryAfter=1` }], { retryDelaysMs: [10] });
    const c = await settled(callbacks[0].id);
    expect(c.status).toBe('succeeded');
    const seen = receiver.byId(callbacks[0].id).map((r) => r.arrivedAt);
    expect(seen[1] - seen[0]).toBeGreaterThanOrEqual(950);
  });

  it('should fail at once on 4xx and 3xx, without retrying', async () => {
    const { callbacks } = await send([{ url: `${receiver.url}/gone?code=404` }, { url: `${receiver.url}/moved?code=302` }], { retryDelaysMs: [10] });
    for (const { id } of callbacks) {
      const c = await settled(id);
      expect(c.status).toBe('failed');
      expect(c.attempts).toHaveLength(1);
    }
    expect(receiver.byId(callbacks[0].id)).toHaveLength(1);
  });

  it('should fail after maxAttempts with every attempt recorded', async () => {
    const port = await closedPort();
    const { callbacks } = await send([{ url: `http://127.0.0.1:${port}/`, maxAttempts: 3, retryDelaysMs: [50] }]);
    const c = await settled(callbacks[0].id);
    expect(c.status).toBe('failed');
    expect(c.attempts.map((a: { outcome: string }) => a.outcome)).toEqual(['connect_error', 'connect_error', 'connect_error']);
  });

  it('should cancel a pending callback so it is never sent, and send it again on retry', async () => {
    const runAt = new Date(Date.now() + 60_000).toISOString();
    const { id: batchId, callbacks } = await send([{ url: `${receiver.url}/later`, runAt }]);
    const id = callbacks[0].id;
    const cancelled = await service.api(`/v1/callbacks/${id}/cancel`, { method: 'POST' });
    expect(cancelled.status).toBe(200);
    expect((await jsonOf(cancelled)).status).toBe('cancelled');
    expect((await service.api(`/v1/callbacks/${id}/cancel`, { method: 'POST' })).status).toBe(409);
    const batch = await waitFor(async () => {
      const b = await service.apiJson(`/v1/batches/${batchId}`);
      return b.status === 'completed' ? b : undefined;
    });
    expect(batch.counts.cancelled).toBe(1);

    const retried = await service.api(`/v1/callbacks/${id}/retry`, { method: 'POST' });
    expect(retried.status).toBe(202);
    const c = await settled(id);
    expect(c.status).toBe('succeeded');
    expect(receiver.byId(id)).toHaveLength(1);
  });

  it('should retry only the failed callbacks of a batch', async () => {
    const { id: batchId, callbacks } = await send([{ url: `${receiver.url}/ok` }, { url: `${receiver.url}/flaky?failTimes=1&failCode=400` }]);
    await settled(callbacks[1].id);
    await settled(callbacks[0].id);
    const res = await service.api(`/v1/batches/${batchId}/retry?status=failed`, { method: 'POST' });
    expect(res.status).toBe(202);
    expect((await jsonOf(res)).retried).toBe(1);
    const c = await settled(callbacks[1].id);
    expect(c.status).toBe('succeeded');
    expect(c.attempts.map((a: { statusCode: number }) => a.statusCode)).toEqual([400, 200]);
    expect(receiver.byId(callbacks[0].id)).toHaveLength(1);
    const batch = await waitFor(async () => {
      const b = await service.apiJson(`/v1/batches/${batchId}`);
      return b.status === 'completed' ? b : undefined;
    });
    expect(batch.counts).toMatchObject({ succeeded: 2, failed: 0 });
  });

  // Regression: `?status=pending` answered 202 {retried: 0}.
  it('should answer 400 to a batch retry of states that cannot be retried, and retry nothing', async () => {
    const { id: batchId, callbacks } = await send([{ url: `${receiver.url}/flaky?failTimes=1&failCode=400` }]);
    await settled(callbacks[0].id);
    // ',' and ', ,': regression, each part empty was skipped and the retry took nothing (202 {retried: 0})
    for (const status of ['pending', 'succeeded', 'in_flight', 'failed,pending', 'nonsense', ',', ', ,']) {
      const res = await service.api(`/v1/batches/${batchId}/retry?status=${status}`, { method: 'POST' });
      expect({ status, code: res.status }).toEqual({ status, code: 400 });
      expect((await jsonOf(res)).message).toMatch(/status must be one of failed, cancelled/);
    }
    expect((await service.apiJson(`/v1/callbacks/${callbacks[0].id}`)).status).toBe('failed');
    const both = await service.api(`/v1/batches/${batchId}/retry?status=failed,,cancelled,`, { method: 'POST' });
    expect(both.status).toBe(202);
    expect((await jsonOf(both)).retried).toBe(1);
  });

  it('should refuse to retry a callback that succeeded, and 404 an unknown one', async () => {
    const { callbacks } = await send([{ url: `${receiver.url}/ok` }]);
    await settled(callbacks[0].id);
    expect((await service.api(`/v1/callbacks/${callbacks[0].id}/retry`, { method: 'POST' })).status).toBe(409);
    expect((await service.api(`/v1/callbacks/01a22c3d-0000-7000-8000-000000000000/retry`, { method: 'POST' })).status).toBe(404);
  });
});
