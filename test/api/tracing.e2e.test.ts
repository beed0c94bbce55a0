import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { traceAttempt } from '../../src/dispatch/dispatch.tracing.js';
import { connect, createTestDatabase } from '../support/database.js';
import { spawnService } from '../support/process.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor } from '../support/service.js';
import { checkedFetch } from '../support/openapi-validator.js';

const KEY = 'cbk_tracing_test_key_0123456789abcd';
const SERVER = 2;
const CLIENT = 3;

type AnyValue = { stringValue?: string; intValue?: number | string; doubleValue?: number; boolValue?: boolean };
type OtlpSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: Array<{ key: string; value: AnyValue }>;
  links?: Array<{ traceId: string; spanId: string }>;
  status?: { code?: number };
};
type Span = OtlpSpan & { attrs: Record<string, unknown>; service: unknown };

const valueOf = (v: AnyValue) => v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.doubleValue ?? v.boolValue));

/**
 * A real OTLP/HTTP receiver: POST /v1/traces, bodies decoded as OTLP JSON
 * (http/json); a protobuf body is only counted (`protobufPosts`).
 */
async function startCollector() {
  const spans: Span[] = [];
  const seen = { protobufPosts: 0, paths: new Set<string>() };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      seen.paths.add(`${req.method} ${req.url}`);
      const type = String(req.headers['content-type'] ?? '');
      if (req.method === 'POST' && req.url === '/v1/traces' && type.startsWith('application/json')) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        for (const rs of body.resourceSpans ?? []) {
          const service = valueOf(rs.resource?.attributes?.find((a: { key: string }) => a.key === 'service.name')?.value ?? {});
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans as OtlpSpan[]) {
              spans.push({ ...s, service, attrs: Object.fromEntries((s.attributes ?? []).map((a) => [a.key, valueOf(a.value)])) });
            }
          }
        }
      } else if (type.startsWith('application/x-protobuf')) seen.protobufPosts++;
      res.writeHead(200, { 'content-type': type.startsWith('application/json') ? 'application/json' : 'application/x-protobuf' });
      res.end(type.startsWith('application/json') ? '{}' : '');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, seen, close: () => new Promise((r) => server.close(r)) };
}

describe(traceAttempt.name, () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let receiver: Receiver;
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });
  beforeAll(async () => {
    collector = await startCollector();
    receiver = await Receiver.start();
    cleanups.push(collector.close, () => receiver.close());
  });

  const api = (svc: { url: string }, p: string, init: { json?: unknown; headers?: Record<string, string> } = {}) =>
    checkedFetch(svc.url, `${svc.url}${p}`, {
      method: init.json === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...init.headers },
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
    });

  it("should put the API request, every attempt and the write-backs in the caller's trace, over OTLP http/json", async () => {
    const db = await createTestDatabase();
    cleanups.push(db.drop);
    const svc = await spawnService({
      DATABASE_URL: db.url,
      BOOTSTRAP_API_KEY: KEY,
      LOG_LEVEL: 'error',
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'dispatch-under-test',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    });
    cleanups.push(svc.stop);

    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const res = await api(svc, '/v1/batches', {
      headers: { traceparent: `00-${traceId}-${callerSpan}-01` },
      json: {
        callbacks: [
          { url: `${receiver.url}/ok`, maxAttempts: 1, headers: { traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01` } },
          { url: `${receiver.url}/flaky?failTimes=1&failCode=503`, maxAttempts: 2, retryDelaysMs: [20] },
        ],
      },
    });
    expect(res.status).toBe(202);
    const { id, callbacks } = (await res.json()) as { id: string; callbacks: Array<{ id: string }> };
    await waitFor(async () => ((await (await api(svc, `/v1/batches/${id}`)).json()) as { status: string }).status === 'completed', 15_000);

    const inTrace = () => collector.spans.filter((s) => s.traceId === traceId);
    // 1 server span + 3 attempts (one retried), then the write-backs linking them.
    await waitFor(() => inTrace().length >= 4 && collector.spans.filter((s) => s.name === 'write-back').flatMap((s) => s.links ?? []).length >= 3, 15_000);

    const server = inTrace().filter((s) => s.kind === SERVER);
    expect(server).toHaveLength(1);
    expect(server[0]).toMatchObject({ name: 'POST /v1/batches', parentSpanId: callerSpan, service: 'dispatch-under-test' });
    expect(server[0].attrs).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/v1/batches',
      'url.path': '/v1/batches',
      'http.response.status_code': 202,
    });

    const attempts = inTrace().filter((s) => s.kind === CLIENT);
    expect(attempts).toHaveLength(3);
    for (const a of attempts) {
      expect(a.parentSpanId).toBe(server[0].spanId);
      expect(a.name).toBe('POST');
      expect(a.attrs).toMatchObject({ 'http.request.method': 'POST', 'server.address': '127.0.0.1', 'server.port': Number(new URL(receiver.url).port) });
      expect(a.attrs['url.full']).toMatch(new RegExp(`^${receiver.url}/(ok|flaky)`));
      expect(a.attrs['dispatch.phase.total_ms']).toBeGreaterThan(0);
      expect(a.attrs['dispatch.phase.first_byte_ms']).toBeGreaterThan(0);
      expect(a.attrs).toHaveProperty('dispatch.phase.connect_ms');
    }
    const byCallback = (cb: string) => attempts.filter((a) => a.attrs['callback.id'] === cb);
    expect(byCallback(callbacks[0].id).map((a) => a.attrs['http.response.status_code'])).toEqual([200]);
    const flaky = byCallback(callbacks[1].id);
    expect(flaky.map((a) => a.attrs['http.response.status_code']).sort()).toEqual([200, 503]);
    const failed = flaky.find((a) => a.attrs['http.response.status_code'] === 503)!;
    expect(failed.attrs['error.type']).toBe('503');
    expect(failed.status?.code).toBe(2); // ERROR
    expect(flaky.find((a) => a.attrs['http.response.status_code'] === 200)!.attrs['error.type']).toBeUndefined();

    // Each request the receiver got carried its own attempt span's traceparent
    // (the client's own traceparent header replaced), and no other.
    const sent = [...receiver.byId(callbacks[0].id), ...receiver.byId(callbacks[1].id)].map((r) => r.headers.traceparent);
    expect(sent.sort()).toEqual(attempts.map((a) => `00-${traceId}-${a.spanId}-01`).sort());

    // Write-backs are spans of their own, linked to the attempts whose outcomes they wrote.
    const writeBacks = collector.spans.filter((s) => s.name === 'write-back');
    expect(writeBacks.every((w) => w.traceId !== traceId && w.attrs['db.system.name'] === 'postgresql')).toBe(true);
    const linked = writeBacks.flatMap((w) => w.links ?? []);
    for (const a of attempts) expect(linked).toContainEqual(expect.objectContaining({ traceId, spanId: a.spanId }));
  });

  // In this process (one spawned service fewer): tracing is module state, so this service
  // is stopped before the next test, which needs tracing off. The SDK reads OTEL_BSP_* from
  // the environment as it starts: set for the start only.
  it('should export http/protobuf to the traces endpoint when that protocol is chosen', async () => {
    const before = collector.seen.protobufPosts;
    const bspDelay = process.env.OTEL_BSP_SCHEDULE_DELAY;
    process.env.OTEL_BSP_SCHEDULE_DELAY = '50';
    const svc = await startTestService({
      bootstrapApiKey: KEY,
      otelExporterOtlpTracesEndpoint: `${collector.url}/v1/traces`,
      otelExporterOtlpProtocol: 'http/protobuf',
    }).finally(() => {
      if (bspDelay === undefined) delete process.env.OTEL_BSP_SCHEDULE_DELAY;
      else process.env.OTEL_BSP_SCHEDULE_DELAY = bspDelay;
    });
    try {
      expect((await api(svc, '/v1/batches')).status).toBe(200);
      await waitFor(() => collector.seen.protobufPosts > before, 10_000);
    } finally {
      await svc.dispose();
    }
  });

  it('should send no traceparent and store no trace context while tracing is off', async () => {
    const service = await startTestService();
    cleanups.push(service.dispose);
    const res = await service.api('/v1/batches', {
      method: 'POST',
      headers: { traceparent: `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01` },
      json: { callbacks: [{ url: `${receiver.url}/untraced`, maxAttempts: 1 }] },
    });
    const { callbacks } = (await res.json()) as { callbacks: Array<{ id: string }> };
    await waitFor(() => receiver.byId(callbacks[0].id).length === 1, 10_000);
    expect(receiver.byId(callbacks[0].id)[0].headers.traceparent).toBeUndefined();
    const db = await connect(service.databaseUrl);
    try {
      expect((await db.query('SELECT traceparent FROM callback WHERE id = $1', [callbacks[0].id])).rows).toEqual([{ traceparent: null }]);
    } finally {
      await db.end();
    }
  });
});
