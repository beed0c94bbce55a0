import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MetricsController } from '../../src/metrics/metrics.controller.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';

/** The value of one sample line `name{labels} value` of a Prometheus text exposition. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const METRICS_TOKEN = 'metrics-token-for-tests-0123';

describe(MetricsController.name, () => {
  let service: TestService;
  let receiver: Receiver;

  beforeAll(async () => {
    // TRUSTED_PROXIES set as well: a METRICS_TOKEN serves the scrapes that send it even then (every scrape of this block)
    service = await startTestService({ metricsToken: METRICS_TOKEN, trustedProxies: ['127.0.0.1/32'] });
    receiver = await Receiver.start();
    await receiver.warmUp();
  });
  afterAll(async () => {
    await service?.dispose();
    await receiver?.close();
  });

  const scrape = async () => {
    const res = await service.api('/metrics', { key: METRICS_TOKEN });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return res.text();
  };

  it('should count attempts by outcome with their durations, and time claims and write-backs', async () => {
    const batch = await service.apiJson('/v1/batches', {
      method: 'POST',
      json: {
        callbacks: [
          { url: `${receiver.url}/?sleep=300` },
          { url: `${receiver.url}/?sleep=10` },
          { url: `${receiver.url}/?code=500`, maxAttempts: 1 },
          { url: `${receiver.url}/?hang=1`, timeoutMs: 300, maxAttempts: 1 },
        ],
      },
    });
    await waitFor(async () => (await service.apiJson(`/v1/batches/${batch.id}`)).status === 'completed');
    const text = await scrape();
    expect(sample(text, 'callback_attempts_total{outcome="success"}')).toBe(2);
    expect(sample(text, 'callback_attempts_total{outcome="http_error"}')).toBe(1);
    expect(sample(text, 'callback_attempts_total{outcome="timeout"}')).toBe(1);
    expect(sample(text, 'callback_attempt_duration_seconds_count{outcome="success"}')).toBe(2);
    // One success took ~300 ms, the other ~10 ms: exactly one of them is under 250 ms.
    expect(sample(text, 'callback_attempt_duration_seconds_bucket{le="0.25",outcome="success"}')).toBe(1);
    expect(sample(text, 'callback_attempt_duration_seconds_bucket{le="0.5",outcome="success"}')).toBe(2);
    expect(sample(text, 'callback_attempt_duration_seconds_sum{outcome="timeout"}')).toBeCloseTo(0.3, 1);
    expect(sample(text, 'dispatch_claimed_rows_total')).toBe(4);
    expect(sample(text, 'dispatch_written_rows_total')).toBe(4);
    expect(sample(text, 'dispatch_claim_duration_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'dispatch_writeback_duration_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'callback_due_backlog')).toBe(0);
    expect(text).toContain('process_cpu_seconds_total');
    expect(sample(text, 'http_request_duration_seconds_count{method="POST",route="/v1/batches",status="202"}')).toBe(1);
    expect(sample(text, 'http_request_duration_seconds_count{method="GET",route="/v1/batches/:id",status="200"}')).toBeGreaterThanOrEqual(1);
  });

  it('should show a call in flight in the worker window and in its host state', async () => {
    const batch = await service.apiJson('/v1/batches', {
      method: 'POST',
      json: { callbacks: [{ url: `${receiver.url}/?hang=1`, timeoutMs: 1500, maxAttempts: 1 }] },
    });
    const host = receiver.url; // http://127.0.0.1:<port>, as callback.host stores it
    await waitFor(async () => sample(await scrape(), 'dispatcher_window{state="in_flight"}') === 1, 1000, 20);
    const text = await scrape();
    expect(sample(text, `host_in_flight{host="${host}"}`)).toBe(1);
    expect(sample(text, `host_breaker_state{host="${host}",state="closed"}`)).toBe(1);
    await waitFor(async () => (await service.apiJson(`/v1/batches/${batch.id}`)).status === 'completed', 5000);
    const after = await scrape();
    expect(sample(after, 'dispatcher_window{state="in_flight"}')).toBe(0);
    expect(sample(after, `host_in_flight{host="${host}"}`)).toBeUndefined();
  });

  it("should say a receiver failing every attempt, how long, and this process's leadership and readiness", async () => {
    expect((await service.api('/v1/receivers/always-500', { method: 'PUT', json: { url: `${receiver.url}/?code=500` } })).status).toBe(201);
    const batch = await service.apiJson('/v1/batches', {
      method: 'POST',
      json: {
        callbacks: [
          { receiver: 'always-500', maxAttempts: 1 },
          { receiver: 'always-500', maxAttempts: 1 },
        ],
      },
    });
    await waitFor(async () => (await service.apiJson(`/v1/batches/${batch.id}`)).status === 'completed');
    const text = await waitFor(async () => {
      const t = await scrape();
      return sample(t, 'receivers_failing') === 1 && t;
    });
    expect(sample(text, 'receiver_failing_seconds{key_name="bootstrap",receiver="always-500"}')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'receiver_failing_seconds{key_name="bootstrap",receiver="always-500"}')).toBeLessThan(60);
    await waitFor(async () => sample(await scrape(), 'maintenance_leader') === 1);
    const ready = await scrape();
    expect(sample(ready, 'service_ready{check="database"}')).toBe(1);
    expect(sample(ready, 'service_ready{check="migrations"}')).toBe(1);
    expect(sample(ready, 'service_ready{check="worker"}')).toBe(1);
    expect(sample(ready, 'callback_due_oldest_age_seconds')).toBe(0);
  });

  it('should refuse a scrape without the METRICS_TOKEN when one is set', async () => {
    expect((await service.api('/metrics', { key: null })).status).toBe(401);
    expect((await service.api('/metrics', { key: 'metrics-token-for-tests-0124' })).status).toBe(401);
    expect((await service.api('/metrics', { key: METRICS_TOKEN })).status).toBe(200);
  });
});

describe(`${MetricsController.name} without METRICS_TOKEN`, () => {
  // (served with the token under TRUSTED_PROXIES: the first block's service has both, and every scrape of it is a 200)
  it('should answer 403 naming METRICS_TOKEN when the port is reachable from other machines (here: through TRUSTED_PROXIES)', async () => {
    const service = await startTestService({ role: 'api', trustedProxies: ['127.0.0.1/32'] });
    try {
      const res = await service.api('/metrics', { key: null });
      expect(res.status).toBe(403);
      expect(await res.json()).toMatchObject({
        code: 'forbidden',
        message: expect.stringMatching(/needs METRICS_TOKEN: TRUSTED_PROXIES is set.*set METRICS_TOKEN/),
      });
    } finally {
      await service.dispose();
    }
  });
});

describe(`${MetricsController.name} (API role)`, () => {
  it('should count due callbacks no worker has claimed as the backlog, open to scrapers when no METRICS_TOKEN is set', async () => {
    const service = await startTestService({ role: 'api' });
    try {
      const url = 'http://127.0.0.1:9/never';
      await service.apiJson('/v1/batches', { method: 'POST', json: { callbacks: [{ url }, { url }, { url }, { url, runAt: '2099-01-01T00:00:00Z' }] } });
      const text = await (await service.api('/metrics', { key: null })).text();
      expect(sample(text, 'callback_due_backlog')).toBe(3);
      expect(sample(text, 'dispatcher_window{state="in_flight"}')).toBe(0);
      // Per key: the busiest keys by due backlog (here the one key, with its 3 due callbacks).
      const [key] = (await service.apiJson('/v1/keys')).items;
      expect(sample(text, `callback_key_due_backlog{key_id="${key.id}",key_name="${key.name}"}`)).toBe(3);
      expect(sample(text, `callback_key_in_flight{key_id="${key.id}",key_name="${key.name}"}`)).toBe(0);
      // The oldest due callback ages while no worker claims it; the one due in 2099 is not due.
      const aged = await waitFor(async () => {
        const age = sample(await (await service.api('/metrics', { key: null })).text(), 'callback_due_oldest_age_seconds') ?? 0;
        return age >= 0.5 && age;
      });
      expect(aged).toBeLessThan(30);
      expect(sample(text, 'maintenance_leader')).toBe(0);
      expect(sample(text, 'service_ready{check="database"}')).toBe(1);
      expect(sample(text, 'service_ready{check="worker"}')).toBeUndefined();
    } finally {
      await service.dispose();
    }
  });
});
