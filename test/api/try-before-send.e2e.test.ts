import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventService } from '../../src/events/event.service.js';
import { Receiver } from '../support/receiver.js';
import { verifies } from '../support/signatures.js';
import { jsonOf, startTestService, waitFor, type TestService } from '../support/service.js';

/** Try before you send (issue 55): the test call to a receiver, and the preview of an event. */
describe(`${EventService.name} preview and the receiver test call`, () => {
  let service: TestService;
  let receiver: Receiver;

  beforeAll(async () => {
    service = await startTestService();
    receiver = await Receiver.start({ host: '127.0.0.85' });
  });
  afterAll(async () => {
    await service?.dispose();
    await receiver?.close();
  });

  const put = (path: string, json: unknown) => service.apiJson(path, { method: 'PUT', json });

  it("should send one signed call with the receiver's credentials now, answer its attempt, and store nothing", async () => {
    const made = await put('/v1/receivers/try-1', {
      url: `${receiver.url}/try?code=202&body=thanks`,
      headers: { 'x-shop': '1' },
      auth: { type: 'bearer', token: 'try-token-0123' },
    });
    const before = receiver.requests.length;
    const res = await service.api('/v1/receivers/try-1/test', { method: 'POST' });
    expect(res.status).toBe(200);
    const attempt = await jsonOf(res);
    expect(attempt).toMatchObject({ receiver: 'try-1', statusCode: 202, outcome: 'success', ok: true, auth: 'bearer', error: null, responseBody: 'thanks' });
    expect(attempt.phases).toMatchObject({ dnsMs: expect.any(Number), connectMs: expect.any(Number), firstByteMs: expect.any(Number) });
    // the receiver records a request when its connection closes, which may be after the answer came back
    const sent = await waitFor(() => (receiver.requests.length > before ? receiver.requests.slice(before) : undefined));
    expect(sent).toHaveLength(1);
    expect(sent[0].headers).toMatchObject({ authorization: 'Bearer try-token-0123', 'x-shop': '1', 'webhook-id': attempt.webhookId });
    expect(JSON.parse(sent[0].body)).toMatchObject({ type: 'receiver.test', receiver: 'try-1' });
    expect(verifies(made.secrets[0].secret, sent[0])).toBe(true);
    expect(JSON.stringify(attempt)).not.toContain('try-token-0123');
    // nothing stored: no callback, no batch
    expect((await service.apiJson('/v1/callbacks?receiver=try-1')).items).toEqual([]);

    // a failing receiver: the attempt says why; a disabled one is tested too; an unknown one is a 404
    await put('/v1/receivers/try-2', { url: `${receiver.url}/down?code=500`, disabled: true });
    expect(await service.apiJson('/v1/receivers/try-2/test', { method: 'POST' })).toMatchObject({ statusCode: 500, outcome: 'http_error', ok: false });
    expect((await service.api('/v1/receivers/nobody/test', { method: 'POST' })).status).toBe(404);
  });

  it('should say who would get an event and who would not, and why, storing nothing', async () => {
    await put('/v1/event-types/order.paid', { schema: { type: 'object', properties: { amount: { type: 'integer' } }, required: ['amount'] } });
    await put('/v1/receivers/p-all', { url: `${receiver.url}/a`, eventTypes: ['order.*'] });
    await put('/v1/receivers/p-big', { url: `${receiver.url}/b`, eventTypes: ['order.paid'], filter: { amount: { $gte: 1000 } } });
    await put('/v1/receivers/p-off', { url: `${receiver.url}/c`, eventTypes: ['order.paid'], disabled: true });
    await put('/v1/receivers/p-other', { url: `${receiver.url}/d`, eventTypes: ['invoice.*'] });
    const before = receiver.requests.length;

    const all = await service.apiJson('/v1/events/preview', { method: 'POST', json: { type: 'order.paid', payload: { amount: 50 } } });
    const byName = (p: { receivers: Array<{ receiver: string }> }) => Object.fromEntries(p.receivers.map((r) => [r.receiver, r]));
    expect(all).toMatchObject({ type: 'order.paid', problem: null, deliveries: 2 });
    expect(byName(all)).toEqual({
      'p-all': { receiver: 'p-all', delivers: true, reason: 'delivered', detail: 'subscribed through order.*' },
      'p-big': { receiver: 'p-big', delivers: false, reason: 'filter_failed', detail: expect.any(String) },
      'p-off': { receiver: 'p-off', delivers: true, reason: 'disabled', detail: expect.stringContaining('held') },
    });
    // named receivers, one not subscribed
    const named = await service.apiJson('/v1/events/preview', {
      method: 'POST',
      json: { type: 'order.paid', payload: { amount: 5000 }, receivers: ['p-big', 'p-other'] },
    });
    expect(byName(named)).toMatchObject({ 'p-big': { delivers: true, reason: 'delivered' }, 'p-other': { delivers: false, reason: 'not_subscribed' } });
    // a payload its schema refuses: nobody, and why
    const refused = await service.apiJson('/v1/events/preview', { method: 'POST', json: { type: 'order.paid', payload: { amount: 'x' } } });
    expect(refused.problem).toMatch(/payload at \/amount must be integer/);
    expect(refused.deliveries).toBe(0);
    expect(refused.receivers.every((r: { reason: string }) => r.reason === 'event_refused')).toBe(true);
    const unknownType = await service.apiJson('/v1/events/preview', { method: 'POST', json: { type: 'order.lost', payload: {} } });
    expect(unknownType.problem).toMatch(/unknown event type order.lost/);
    expect((await service.api('/v1/events/preview', { method: 'POST', json: { type: 'order.paid', payload: {}, receivers: ['ghost'] } })).status).toBe(400);

    // nothing stored or sent
    expect((await service.apiJson('/v1/events')).items).toEqual([]);
    expect(receiver.requests.length).toBe(before);
  });
});
