import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TransformStep } from '../../src/dispatch/transform.step.js';
import { Receiver, type ReceivedRequest } from '../support/receiver.js';
import { verifies } from '../support/signatures.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';

/** What a finished callback shows: GET /v1/callbacks/:id, loosely typed. */
interface CallbackView {
  id: string;
  status: string;
  attempts: Array<{ outcome: string; error: string | null; auth: string | null; transformed: ReceivedRequest | null }>;
}

/** Reports everything it was given in the body it makes, sets an Authorization header of its own, and moves the path. */
const NOSY = `function handler(webhook) {
  const seen = JSON.stringify(webhook);
  webhook.headers['Authorization'] = 'Bearer forged-by-the-transform';
  webhook.url = webhook.url + '/shaped';
  webhook.body = { shaped: webhook.body.order === undefined ? webhook.body.type : webhook.body.order, seen: seen };
  return webhook;
}`;

const PASSWORD = 'pa:ss-never-seen-0123';
const BASIC = `Basic ${Buffer.from(`merchant-7:${PASSWORD}`).toString('base64')}`;

/**
 * A receiver with both credentials and a transform: the transform shapes the request, the
 * service signs what it made, and the receiver's authentication is added last, where the
 * transform can neither read nor replace it, and only at the callback's own destination.
 */
describe(`${TransformStep.name} with receiver authentication`, () => {
  let service: TestService;
  let receiver: Receiver;
  let elsewhere: Receiver;

  /** shaped-basic's signing secret. */
  let secret: string;

  beforeAll(async () => {
    // A budget no busy machine runs over: what is checked is where credentials go, not the time bound (transforms.timing.test.ts).
    [service, receiver, elsewhere] = await Promise.all([startTestService({ transformTimeoutMs: 1000 }), Receiver.start(), Receiver.start()]);
    const made = await putReceiver('shaped-basic', {
      url: `${receiver.url}/hooks`,
      headers: { 'x-shop': '7' },
      auth: { type: 'basic', username: 'merchant-7', password: PASSWORD },
      transform: { code: NOSY },
    });
    secret = made.secrets[0].secret;
    // the same code, which moves every call to another destination, on a receiver with credentials and on one without
    const move = `function handler(webhook) {\n  webhook.url = '${elsewhere.url}/collect';\n  return webhook;\n}`;
    await putReceiver('mover-bearer', { url: `${receiver.url}/mover`, auth: { type: 'bearer', token: 'bearer-never-moved' }, transform: { code: move } });
    await putReceiver('mover-plain', { url: `${receiver.url}/mover`, transform: { code: move } });
    await putReceiver('dropper', {
      url: `${receiver.url}/dropper`,
      auth: { type: 'bearer', token: 'dropped-token' },
      transform: { code: 'function handler() { return null; }' },
    });
  });
  afterAll(async () => {
    await service?.dispose();
    await Promise.all([receiver?.close(), elsewhere?.close()]);
  });

  async function putReceiver(name: string, settings: Record<string, unknown>) {
    const res = await service.api(`/v1/receivers/${name}`, { method: 'PUT', json: settings });
    const body = await res.json();
    expect(res.status, JSON.stringify(body)).toBeLessThan(300);
    return body as { secrets: Array<{ secret: string }> };
  }

  async function deliver(callback: Record<string, unknown>): Promise<CallbackView> {
    const res = await service.api('/v1/batches', { method: 'POST', json: { callbacks: [callback] } });
    expect(res.status).toBe(202);
    const id = ((await res.json()) as { callbacks: Array<{ id: string }> }).callbacks[0].id;
    return waitFor(async () => {
      const view = (await service.apiJson(`/v1/callbacks/${id}`)) as CallbackView;
      return view.status !== 'pending' && view.status !== 'in_flight' && view;
    }, 15_000);
  }

  /** What the transform reported it was given, from the body it made. */
  const seenBy = (got: ReceivedRequest) => JSON.parse(JSON.parse(got.body).seen as string) as { headers: Record<string, string> };

  it("should send the transformed body, signed over it, with the receiver's basic auth, which the transform neither saw nor replaced", async () => {
    const view = await deliver({ receiver: 'shaped-basic', body: { order: 42 } });
    expect(view.status).toBe('succeeded');
    expect(view.attempts[0]).toMatchObject({ outcome: 'success', auth: 'basic' });

    const got = await waitFor(() => receiver.byId(view.id)[0]);
    expect(got.url).toBe('/hooks/shaped');
    expect(JSON.parse(got.body)).toMatchObject({ shaped: 42 });
    expect(verifies(secret, got)).toBe(true);
    // the receiver's auth, not the transform's: one Authorization header, the credential's
    expect(got.headers.authorization).toBe(BASIC);
    expect(got.rawHeaders.filter((h, i) => i % 2 === 0 && h.toLowerCase() === 'authorization')).toHaveLength(1);
    // the transform was given the stored request: its headers, no credential in any form
    const seen = seenBy(got);
    expect(seen.headers).toMatchObject({ 'x-shop': '7' });
    expect(Object.keys(seen.headers).map((h) => h.toLowerCase())).not.toContain('authorization');
    expect(JSON.stringify(seen)).not.toContain(PASSWORD);
    expect(JSON.stringify(seen)).not.toContain(BASIC.slice('Basic '.length));

    // the attempt keeps the request as sent, but neither the credential nor the header it replaced
    const transformed = view.attempts[0].transformed!;
    expect(transformed.body).toBe(got.body);
    expect(transformed.headers['webhook-signature']).toBe(got.headers['webhook-signature']);
    expect(Object.keys(transformed.headers).map((h) => h.toLowerCase())).not.toContain('authorization');
    expect(JSON.stringify(view)).not.toContain(BASIC.slice('Basic '.length));
  });

  it("should keep the credentials at the callback's own destination: a transform that moves the call fails as transform_error, sending nothing", async () => {
    const view = await deliver({ receiver: 'mover-bearer', body: {}, maxAttempts: 1 });
    expect(view.attempts[0]).toMatchObject({ outcome: 'transform_error', auth: null, transformed: null });
    expect(view.attempts[0].error).toContain("the receiver's credentials (auth, tls) go only to the callback's own destination");
    expect(receiver.byId(view.id)).toEqual([]);
    expect(elsewhere.requests).toEqual([]);

    // the same code on a receiver without credentials goes on to the other destination's network rule (here: blocked)
    const plain = await deliver({ receiver: 'mover-plain', body: {}, maxAttempts: 1 });
    expect(plain.attempts[0].outcome).toBe('blocked');
  });

  describe('POST /v1/receivers/{name}/transform/test', () => {
    it('should answer which credentials go with the request, never their values, and the error the worker would record', async () => {
      const tried = await service.apiJson('/v1/receivers/shaped-basic/transform/test', { method: 'POST', json: { payload: { order: 9 } } });
      expect(tried).toMatchObject({ result: 'send', auth: 'basic', tls: false, request: { url: `${receiver.url}/hooks/shaped` } });
      expect(Object.keys(tried.request.headers).map((h: string) => h.toLowerCase())).not.toContain('authorization');
      expect(verifies(secret, tried.request)).toBe(true);
      expect(JSON.stringify(tried)).not.toContain(PASSWORD);

      const moved = await service.apiJson('/v1/receivers/mover-bearer/transform/test', { method: 'POST', json: { payload: {} } });
      expect(moved).toMatchObject({ result: 'error', request: null, auth: 'bearer', error: { message: expect.stringContaining('go only to the callback') } });
      const plain = await service.apiJson('/v1/receivers/mover-plain/transform/test', { method: 'POST', json: { payload: {} } });
      expect(plain).toMatchObject({ result: 'send', auth: null, tls: false, request: { url: `${elsewhere.url}/collect` } });
    });
  });

  describe('POST /v1/receivers/{name}/test', () => {
    it('should make the test call as the worker makes a call: through the transform, signed over its body, with the credentials added last', async () => {
      const before = receiver.requests.length;
      const attempt = await service.apiJson('/v1/receivers/shaped-basic/test', { method: 'POST' });
      expect(attempt).toMatchObject({ ok: true, outcome: 'success', auth: 'basic', url: `${receiver.url}/hooks/shaped` });
      const got = await waitFor(() => receiver.requests.slice(before).find((r) => r.headers['webhook-id'] === attempt.webhookId));
      expect(got.body).toBe(attempt.body);
      expect(JSON.parse(got.body)).toMatchObject({ shaped: 'receiver.test' });
      expect(got.headers.authorization).toBe(BASIC);
      expect(verifies(secret, got)).toBe(true);
      expect(Object.keys(seenBy(got).headers).map((h) => h.toLowerCase())).not.toContain('authorization');
      expect(JSON.stringify(attempt)).not.toContain(PASSWORD);

      // a transform that moves it: the worker's transform_error, nothing sent; one that returns null: nothing sent, no outcome
      const moved = await service.apiJson('/v1/receivers/mover-bearer/test', { method: 'POST' });
      expect(moved).toMatchObject({ ok: false, outcome: 'transform_error', statusCode: null, auth: null });
      const dropped = await service.apiJson('/v1/receivers/dropper/test', { method: 'POST' });
      expect(dropped).toMatchObject({ ok: false, outcome: null, statusCode: null, error: expect.stringMatching(/^transform: the handler returned null/) });
      expect(elsewhere.requests).toEqual([]);
      expect(receiver.requests.slice(before).filter((r) => r.url.startsWith('/dropper') || r.url.startsWith('/mover'))).toEqual([]);
    });
  });
});
