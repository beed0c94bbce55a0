import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TransformSandbox } from '../../src/transforms/transform.sandbox.js';
import { Receiver, type ReceivedRequest } from '../support/receiver.js';
import { verifies } from '../support/signatures.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';

/** What a finished callback shows: GET /v1/callbacks/:id, loosely typed. */
interface CallbackView {
  id: string;
  status: string;
  lastError: string | null;
  attempts: Array<{ number: number; outcome: string; error: string | null; statusCode: number | null; transformed: ReceivedRequest | null }>;
}

const SLACK = `function handler(webhook) {
  webhook.url = webhook.url + '/slack';
  webhook.headers['x-shaped-by'] = webhook.receiver + ' #' + webhook.attempt;
  webhook.body = { text: 'Order ' + webhook.body.order + ' paid' + (webhook.eventType ? ' (' + webhook.eventType + ')' : '') };
  return webhook;
}`;

describe('Transformations', () => {
  let service: TestService;
  let receiver: Receiver;
  const now = () => performance.timeOrigin + performance.now();

  beforeAll(async () => {
    [service, receiver] = await Promise.all([startTestService({ transformTimeoutMs: 50 }), Receiver.start()]);
  });
  afterAll(async () => {
    await service?.dispose();
    await receiver?.close();
  });

  async function putReceiver(name: string, settings: Record<string, unknown>) {
    const res = await service.api(`/v1/receivers/${name}`, { method: 'PUT', json: settings });
    const body = await res.json();
    expect(res.status, JSON.stringify(body)).toBeLessThan(300);
    return body as { secrets: Array<{ secret: string }>; transform: { code: string } | null };
  }

  async function send(callbacks: Array<Record<string, unknown>>): Promise<string[]> {
    const res = await service.api('/v1/batches', { method: 'POST', json: { callbacks } });
    expect(res.status).toBe(202);
    return ((await res.json()) as { callbacks: Array<{ id: string }> }).callbacks.map((c) => c.id);
  }

  /** The callbacks once none of them is pending or in flight. */
  async function settled(ids: string[], timeoutMs = 15_000): Promise<CallbackView[]> {
    return waitFor(async () => {
      const views = (await Promise.all(ids.map((id) => service.apiJson(`/v1/callbacks/${id}`)))) as CallbackView[];
      return views.every((v) => v.status !== 'pending' && v.status !== 'in_flight') && views;
    }, timeoutMs);
  }

  it('should send the body and headers the transform made, signed over what arrived, and record them on the attempt', async () => {
    const { secrets } = await putReceiver('slack', { url: `${receiver.url}/hooks`, transform: { code: SLACK } });
    await service.api('/v1/event-types/order.paid', { method: 'PUT', json: {} });
    await putReceiver('slack', { eventTypes: ['order.paid'] });
    const ids = await send([{ receiver: 'slack', body: { order: 42 } }]);
    const event = await service.apiJson('/v1/events', { method: 'POST', json: { type: 'order.paid', payload: { order: 43 } } });
    await waitFor(async () => (await service.apiJson(`/v1/events/${event.id}`)).callbacks[0]?.status === 'succeeded');
    const delivery = (await service.apiJson(`/v1/events/${event.id}`)).callbacks[0].callbackId as string;
    const [view] = await settled(ids);
    expect(view.status).toBe('succeeded');

    const [plain] = receiver.byId(ids[0]);
    expect(plain.url).toBe('/hooks/slack');
    expect(JSON.parse(plain.body)).toEqual({ text: 'Order 42 paid' });
    expect(plain.headers['x-shaped-by']).toBe('slack #1');
    expect(plain.headers['content-type']).toBe('application/json');
    expect(verifies(secrets[0].secret, plain)).toBe(true);
    // the attempt keeps the request as it went, signature included
    const transformed = view.attempts[0].transformed!;
    expect(transformed.body).toBe(plain.body);
    expect(transformed.url).toBe(`${receiver.url}/hooks/slack`);
    expect(transformed.headers['webhook-signature']).toBe(plain.headers['webhook-signature']);

    const [fromEvent] = receiver.byId(delivery);
    expect(JSON.parse(fromEvent.body)).toEqual({ text: 'Order 43 paid (order.paid)' });
    expect(fromEvent.headers['webhook-event-type']).toBe('order.paid'); // the service's own header, kept
    expect(verifies(secrets[0].secret, fromEvent)).toBe(true);

    // An event's delivery stores no body of its own (its event's, stored once): tried on it, the transform gets the event's.
    const tried = await service.apiJson('/v1/receivers/slack/transform/test', { method: 'POST', json: { callbackId: delivery } });
    expect(tried).toMatchObject({ result: 'send', input: { body: '{"order":43}' }, request: { body: fromEvent.body } });
  });

  it('should cancel, sending nothing, a callback whose transform returns null', async () => {
    await putReceiver('big-only', {
      url: `${receiver.url}/big`,
      transform: { code: 'function handler(webhook) {\n  return webhook.body.amount < 100 ? null : webhook;\n}' },
    });
    const [small, large] = await send([
      { receiver: 'big-only', body: { amount: 50 } },
      { receiver: 'big-only', body: { amount: 500 } },
    ]);
    const [smallView, largeView] = await settled([small, large]);
    expect(smallView).toMatchObject({ status: 'cancelled', lastError: expect.stringMatching(/^transform: /), attempts: [] });
    expect(receiver.byId(small)).toEqual([]);
    expect(largeView.status).toBe('succeeded');
    expect(receiver.byId(large)).toHaveLength(1);
  });

  it("should fail a transform's error as a transform_error attempt on the callback's schedule, and send with the fixed transform next", async () => {
    await putReceiver('buggy', {
      url: `${receiver.url}/buggy`,
      transform: { code: 'function handler(webhook) {\n  webhook.body.missing.name = 1;\n  return webhook;\n}' },
    });
    const [id] = await send([{ receiver: 'buggy', body: { ok: true }, maxAttempts: 3, retryDelaysMs: [2500] }]);
    const first = await waitFor(async () => {
      const v = (await service.apiJson(`/v1/callbacks/${id}`)) as CallbackView;
      return v.attempts.length === 1 && v;
    });
    expect(first.status).toBe('pending');
    expect(first.attempts[0]).toMatchObject({ outcome: 'transform_error', statusCode: null, transformed: null });
    expect(first.attempts[0].error).toMatch(/^transform_error: TypeError: .* \(line 2:\d+\)$/);
    expect(receiver.byId(id)).toEqual([]);

    await putReceiver('buggy', { transform: { code: 'function handler(webhook) {\n  webhook.headers["x-fixed"] = "yes";\n  return webhook;\n}' } });
    const [done] = await settled([id]);
    expect(done.status).toBe('succeeded');
    expect(done.attempts.map((a) => a.outcome)).toEqual(['transform_error', 'success']);
    expect(receiver.byId(id).map((r) => r.headers['x-fixed'])).toEqual(['yes']);
  });

  it('should hold what a transform returns to the rules of any callback: the network policy, and the headers the service owns', async () => {
    const policy = `function handler(webhook) {
  if (webhook.body.to === 'metadata') webhook.url = 'http://169.254.169.254/latest/meta-data';
  if (webhook.body.to === 'signature') webhook.headers['webhook-signature'] = 'v1,forged';
  if (webhook.body.to === 'host') webhook.headers['Host'] = 'elsewhere.example';
  return webhook;
}`;
    await putReceiver('rules', { url: `${receiver.url}/rules`, transform: { code: policy } });
    const ids = await send(['metadata', 'signature', 'host'].map((to) => ({ receiver: 'rules', body: { to }, maxAttempts: 1 })));
    const [metadata, signature, host] = await settled(ids);
    expect(metadata.attempts[0].outcome).toBe('blocked');
    expect(signature.attempts[0]).toMatchObject({ outcome: 'transform_error', error: expect.stringContaining('webhook-signature is set by the service') });
    expect(host.attempts[0]).toMatchObject({ outcome: 'transform_error', error: expect.stringContaining('Host is set by the service') });
    expect(ids.flatMap((id) => receiver.byId(id))).toEqual([]);
  });

  it("should hold a key's private-network grant to the callback's own destination: a transform that moves it to another one reaches public addresses only", async () => {
    const elsewhere = await Receiver.start();
    try {
      const move = `function handler(webhook) {\n  if (webhook.body.move) webhook.url = '${elsewhere.url}/moved';\n  else webhook.url = webhook.url + '/stayed';\n  return webhook;\n}`;
      await putReceiver('mover', { url: `${receiver.url}/mover`, transform: { code: move } });
      const [moved, stayed] = await settled(
        await send([
          { receiver: 'mover', body: { move: true }, maxAttempts: 1 },
          { receiver: 'mover', body: {} },
        ]),
      );
      // the test key is granted private networks and 127.0.0.0/8 is open: the stored destination is reached, another loopback port is not
      expect(moved.attempts[0]).toMatchObject({ outcome: 'blocked', error: expect.stringContaining('transform sent it to another destination') });
      expect(elsewhere.requests).toEqual([]);
      expect(stayed.status).toBe('succeeded');
      expect(receiver.byId(stayed.id).map((r) => r.url)).toEqual(['/mover/stayed']);
    } finally {
      await elsewhere.close();
    }
  });

  it('should end hostile transforms as bounded errors while plain callbacks keep their pick-up latency', async () => {
    const hostile = `function handler(webhook) {
  const kind = webhook.body.kind;
  if (kind === 'loop') for (;;) {}
  if (kind === 'bomb') { const a = []; for (;;) a.push('z'.repeat(1e5) + a.length); }
  if (kind === 'require') return require('fs');
  if (kind === 'process') return process.env;
  if (kind === 'fetch') return fetch('http://127.0.0.1:9/');
  return webhook;
}`;
    await putReceiver('hostile', { url: `${receiver.url}/hostile`, transform: { code: hostile } });
    const plain = await Receiver.start({ host: '127.0.0.2' });
    try {
      await plain.warmUp();
      // its destination's secret, host row and connections exist before anything is measured, as for any host in use
      const warm = await send(Array.from({ length: 3 }, () => ({ url: `${plain.url}/warm` })));
      await settled(warm);
      const sandbox = service.app.get(TransformSandbox);
      const kinds = ['loop', 'bomb', 'require', 'process', 'fetch'];
      // A try whose plain call passed 100 ms is made again, up to three: a shared machine stalls a process that long at times.
      let worst = Infinity;
      for (let tryNo = 0; tryNo < 3 && worst > 100; tryNo++) {
        const hostileIds = await send(Array.from({ length: 30 }, (_, i) => ({ receiver: 'hostile', body: { kind: kinds[i % 5] }, maxAttempts: 1 })));
        await waitFor(() => sandbox.backlog > 0);
        const latencies: number[] = [];
        let overlapped = 0;
        for (let i = 0; i < 15; i++) {
          if (sandbox.backlog > 0) overlapped++;
          const sentAt = now();
          const [id] = await send([{ url: `${plain.url}/plain`, body: { i } }]);
          const [r] = await waitFor(() => plain.byId(id).length > 0 && plain.byId(id), 5_000, 2);
          latencies.push(r.arrivedAt - sentAt);
          await new Promise((resolve) => setTimeout(resolve, 30));
        }
        worst = Math.max(...latencies);
        expect(overlapped, 'the plain callbacks went while hostile transforms ran').toBeGreaterThanOrEqual(10);

        const views = await settled(hostileIds, 60_000);
        const byKind = new Map(kinds.map((k) => [k, new Set<string>()]));
        views.forEach((v, i) => {
          expect(v.status).toBe('failed');
          expect(v.attempts).toHaveLength(1);
          expect(v.attempts[0].outcome).toBe('transform_error');
          byKind.get(kinds[i % 5])!.add(v.attempts[0].error!.replace(/ \(line \d+:\d+\)$/, ''));
        });
        expect([...byKind.get('loop')!]).toEqual(['transform_error: timed out after 50 ms']);
        for (const e of byKind.get('bomb')!) expect(e).toMatch(/^transform_error: (out of memory|timed out after 50 ms)/);
        expect([...byKind.get('require')!]).toEqual(["transform_error: ReferenceError: 'require' is not defined"]);
        expect([...byKind.get('process')!]).toEqual(["transform_error: ReferenceError: 'process' is not defined"]);
        expect([...byKind.get('fetch')!]).toEqual(["transform_error: ReferenceError: 'fetch' is not defined"]);
      }
      expect(worst).toBeLessThanOrEqual(100);
      expect(receiver.requests.filter((r) => r.url.startsWith('/hostile'))).toEqual([]);
    } finally {
      await plain.close();
    }
  });

  it('should refuse code that does not compile, naming its line, and remove a transform with null', async () => {
    const res = await service.api('/v1/receivers/typo', {
      method: 'PUT',
      json: { url: `${receiver.url}/t`, transform: { code: 'function handler(w) {\n  return w +;\n}' } },
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { message: string; details: unknown };
    expect(body.message).toMatch(/^transform\.code does not compile: SyntaxError: .* \(line 2:\d+\)$/);
    expect(body.details).toMatchObject({ line: 2 });
    expect((await service.api('/v1/receivers/typo')).status).toBe(404);

    expect(
      (await putReceiver('removed', { url: `${receiver.url}/removed`, transform: { code: 'function handler(w) { return null; }' } })).transform,
    ).not.toBeNull();
    expect((await putReceiver('removed', { transform: null })).transform).toBeNull();
    const [id] = await send([{ receiver: 'removed', body: { n: 1 } }]);
    expect((await settled([id]))[0].status).toBe('succeeded');
  });

  describe('POST /v1/receivers/{name}/transform/test', () => {
    it('should answer what would be sent for a sample and for a past delivery, signed, sending nothing', async () => {
      const { secrets } = await putReceiver('tried', { url: `${receiver.url}/tried`, headers: { 'x-shop': '7' }, transform: { code: SLACK } });
      const before = receiver.requests.length;
      const sample = await service.apiJson('/v1/receivers/tried/transform/test', { method: 'POST', json: { payload: { order: 7 }, eventType: 'order.paid' } });
      expect(sample).toMatchObject({
        result: 'send',
        error: null,
        request: { method: 'POST', url: `${receiver.url}/tried/slack`, body: '{"text":"Order 7 paid (order.paid)"}' },
      });
      expect(sample.request.headers).toMatchObject({ 'x-shop': '7', 'x-shaped-by': 'tried #1', 'content-type': 'application/json' });
      expect(verifies(secrets[0].secret, sample.request)).toBe(true);

      const [id] = await send([{ receiver: 'big-only', body: { amount: 5 } }]);
      await settled([id]);
      const other = await service.api('/v1/receivers/tried/transform/test', { method: 'POST', json: { callbackId: id } });
      expect(other.status).toBe(404); // big-only's delivery, not tried's
      const past = await service.apiJson('/v1/receivers/big-only/transform/test', { method: 'POST', json: { callbackId: id } });
      expect(past).toMatchObject({ result: 'cancel', request: null, input: { body: '{"amount":5}' } });
      const withCode = await service.apiJson('/v1/receivers/big-only/transform/test', {
        method: 'POST',
        json: { callbackId: id, code: 'function handler(w) { w.body.amount *= 100; return w; }' },
      });
      expect(withCode).toMatchObject({ result: 'send', request: { body: '{"amount":500}' } });
      expect(receiver.requests.length).toBe(before);
    });

    it("should answer a failing transform's message with its line", async () => {
      const failing = await service.apiJson('/v1/receivers/tried/transform/test', {
        method: 'POST',
        json: { payload: {}, code: 'function handler(webhook) {\n  const order = webhook.body.order;\n  return order.id;\n}' },
      });
      expect(failing).toMatchObject({ result: 'error', request: null, error: { message: expect.stringMatching(/^TypeError: /), line: 3 } });
      const looping = await service.apiJson('/v1/receivers/tried/transform/test', {
        method: 'POST',
        json: { payload: {}, code: 'function handler(w) {\n  while (true) {}\n}' },
      });
      expect(looping).toMatchObject({ result: 'error', error: { message: 'timed out after 50 ms', line: expect.any(Number) } });
      const neither = await service.api('/v1/receivers/tried/transform/test', { method: 'POST', json: {} });
      expect(neither.status).toBe(400);
    });
  });
});
