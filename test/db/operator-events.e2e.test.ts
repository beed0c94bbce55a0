import type pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { OperatorEndpointService } from '../../src/operator-events/operator-endpoint.service.js';
import { connect, createTestDatabase, type TestDatabase } from '../support/database.js';
import { Receiver, type ReceivedRequest } from '../support/receiver.js';
import { verifies } from '../support/signatures.js';
import { jsonOf, startTestService, waitFor, type TestService } from '../support/service.js';

interface OperatorCall {
  request: ReceivedRequest;
  eventId: string;
  type: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the tests assert on the shape at run time
  body: any;
}

/** The operator events a receiver got: one entry per delivery (a redelivery counts again). */
export function operatorCalls(receiver: Receiver, type?: string): OperatorCall[] {
  return receiver.requests
    .filter((r) => r.headers['webhook-event-id'] !== undefined)
    .map((r) => ({ request: r, eventId: String(r.headers['webhook-event-id']), type: String(r.headers['webhook-event-type']), body: JSON.parse(r.body) }))
    .filter((c) => type === undefined || c.type === type);
}

/** One process (API and worker): the endpoint's API, and each event type once per cause. */
describe(OperatorEndpointService.name, () => {
  let service: TestService;
  let ops: Receiver;
  let target: Receiver;
  let db: pg.Client;
  let database: TestDatabase;
  let secret: string;

  beforeAll(async () => {
    [ops, target] = await Promise.all([Receiver.start({ host: '127.0.0.2' }), Receiver.start({ host: '127.0.0.3' })]);
    database = await createTestDatabase();
    service = await startTestService({ dispatchPollMs: 100, hostBreakerFailures: 3, hostBreakerCooldownMs: 300, receiverDisableAfterHours: 0 }, database.url);
    db = await connect(database.url);
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
    await database?.drop();
    await Promise.all([ops?.close(), target?.close()]);
  });
  beforeEach(() => {
    ops.requests.length = 0;
    target.requests.length = 0;
  });

  const batch = async (json: unknown) => {
    const res = await service.api('/v1/batches', { method: 'POST', json });
    expect(res.status, await res.clone().text()).toBe(202);
    return (await res.json()) as { id: string; callbacks: Array<{ id: string }> };
  };
  const completed = (id: string) => waitFor(async () => (await service.apiJson(`/v1/batches/${id}`)).status === 'completed', 10_000);
  /**
   * Every operator event stored so far has been delivered or has failed for good, so
   * the endpoints have all they will ever get for what has happened: an event is
   * stored in the transaction of its cause (one per cause, by its event id), and its
   * deliveries are callbacks of a batch marked operator_event.
   */
  const settled = () =>
    waitFor(
      async () =>
        (
          await db.query(
            `SELECT count(*)::int AS n FROM callback c JOIN batch b ON b.id = c.batch_id WHERE b.operator_event AND c.status IN ('pending', 'in_flight')`,
          )
        ).rows[0].n === 0,
      10_000,
    );
  const events = async (type: string) => (await db.query('SELECT event_id FROM event WHERE type = $1 ORDER BY id', [type])).rows.map((r) => r.event_id);

  it('should refuse bad input with a 400 and store nothing', async () => {
    for (const json of [
      {},
      { url: 'ftp://x.example' },
      { url: `${ops.url}/ops`, eventTypes: ['batch.done'] },
      { url: `${ops.url}/ops`, secret: 'whsec_c2hvcnQ=' },
    ]) {
      const res = await service.api('/v1/operator-endpoint', { method: 'PUT', json });
      expect(res.status, JSON.stringify(json)).toBe(400);
    }
    expect((await service.api('/v1/operator-endpoint')).status).toBe(404);
    expect((await db.query("SELECT count(*)::int AS n FROM receiver WHERE name = '/operator'")).rows[0].n).toBe(0);
    expect((await db.query('SELECT count(*)::int AS n FROM operator_endpoint')).rows[0].n).toBe(0);
  });

  it('should create the endpoint with its own whsec_ secret, update it, and keep it out of the receivers', async () => {
    const created = await service.api('/v1/operator-endpoint', { method: 'PUT', json: { url: `${ops.url}/ops` } });
    expect(created.status).toBe(201);
    const body = await jsonOf(created);
    expect(body).toMatchObject({ url: `${ops.url}/ops`, eventTypes: null, disabled: false });
    expect(body.secrets[0].secret).toMatch(/^whsec_/);
    secret = body.secrets[0].secret;
    // through the generated client: the routes are in the document it was made from
    const again = await service.client.PUT('/v1/operator-endpoint', { body: { eventTypes: null } });
    expect(again.response.status).toBe(200);
    expect(again.data!.secrets[0].secret).toBe(secret);
    const { data: shown } = await service.client.GET('/v1/operator-endpoint');
    expect(shown).toMatchObject({ url: `${ops.url}/ops`, eventTypes: null, disabled: false, failingSince: null });
    expect((await service.apiJson('/v1/receivers')).items.map((r: { name: string }) => r.name)).not.toContain('/operator');
    // no batch can name it
    const named = await service.api('/v1/batches', { method: 'POST', json: { callbacks: [{ receiver: '/operator', url: `${target.url}/x` }] } });
    expect(named.status).toBe(400);
  });

  it('should send batch.completed once, signed with the endpoint secret, and to the batch notify url too', async () => {
    const b = await batch({
      label: 'orders',
      notify: { url: `${target.url}/done` },
      callbacks: [{ url: `${target.url}/a?sleep=100` }, { url: `${target.url}/b?code=500`, maxAttempts: 1 }],
    });
    await completed(b.id);
    await waitFor(() => operatorCalls(ops, 'batch.completed').length >= 1 && operatorCalls(target, 'batch.completed').length >= 1, 10_000);
    await settled();
    const [call] = operatorCalls(ops, 'batch.completed');
    expect(operatorCalls(ops, 'batch.completed')).toHaveLength(1);
    expect(call.eventId).toBe(`batch.completed:${b.id}`);
    expect(verifies(secret, call.request)).toBe(true);
    expect(call.body).toMatchObject({ id: call.eventId, type: 'batch.completed', data: { batchId: b.id, label: 'orders', total: 2 } });
    expect(call.body.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(new Date(call.body.data.completedAt).toISOString()).toBe(call.body.data.completedAt);
    expect(call.body.data.counts).toMatchObject({ succeeded: 1, failed: 1, pending: 0 });
    // first attempt's start to last attempt's end, as the batch reads it (rounded from Postgres's microseconds there): the 100 ms call at least
    expect(call.body.data.makespanMs).toBeGreaterThanOrEqual(100);
    expect(Math.abs(call.body.data.makespanMs - (await service.apiJson(`/v1/batches/${b.id}`)).makespanMs)).toBeLessThanOrEqual(1);
    // the notify url: the same event, its own delivery, signed with its destination's secret (not the endpoint's)
    const [notified] = operatorCalls(target, 'batch.completed');
    expect(notified.eventId).toBe(call.eventId);
    expect(notified.request.headers['webhook-id']).not.toBe(call.request.headers['webhook-id']);
    expect(verifies(secret, notified.request)).toBe(false);
    expect(await events('batch.completed')).toEqual([`batch.completed:${b.id}`]);
    const detail = await service.apiJson(`/v1/events/${encodeURIComponent(call.eventId)}`);
    expect(detail.callbacks).toHaveLength(2);
  });

  it('should send batch.completed to a notify receiver, signed with that receiver’s own secret', async () => {
    const put = await service.api('/v1/receivers/partner', { method: 'PUT', json: { url: `${target.url}/partner` } });
    expect(put.status).toBe(201);
    const partnerSecret = (await jsonOf(put)).secrets[0].secret as string;
    const b = await batch({ notify: { receiver: 'partner' }, callbacks: [{ url: `${target.url}/a` }] });
    await completed(b.id);
    await waitFor(() => operatorCalls(target, 'batch.completed').length >= 1, 10_000);
    const [call] = operatorCalls(target, 'batch.completed');
    expect(call.request.url).toBe('/partner');
    expect(call.eventId).toBe(`batch.completed:${b.id}`);
    expect(verifies(partnerSecret, call.request)).toBe(true);
    expect(verifies(secret, call.request)).toBe(false);
  });

  it('should refuse a notify with both url and receiver, or an unknown receiver, storing nothing', async () => {
    const before = (await db.query('SELECT count(*)::int AS n FROM batch')).rows[0].n;
    for (const notify of [{ url: `${target.url}/d`, receiver: 'x' }, { receiver: 'nobody' }, {}]) {
      const res = await service.api('/v1/batches', { method: 'POST', json: { notify, callbacks: [{ url: `${target.url}/a` }] } });
      expect(res.status, JSON.stringify(notify)).toBe(400);
    }
    expect((await db.query('SELECT count(*)::int AS n FROM batch')).rows[0].n).toBe(before);
  });

  it('should send callback.exhausted once per callback failed for good, and nothing for the endpoint’s own failures', async () => {
    const b = await batch({ callbacks: [{ url: `${target.url}/x?code=500`, maxAttempts: 1 }, { url: `${target.url}/y?code=404` }] });
    await completed(b.id);
    await waitFor(() => operatorCalls(ops, 'callback.exhausted').length >= 2, 10_000);
    const calls = operatorCalls(ops, 'callback.exhausted');
    expect(new Set(calls.map((c) => c.body.data.callbackId))).toEqual(new Set(b.callbacks.map((c) => c.id)));
    expect(calls.find((c) => c.body.data.callbackId === b.callbacks[0].id)!.body.data).toMatchObject({ attempts: 1, lastStatusCode: 500 });

    // now the endpoint itself fails for good: no event about that, however it fails
    await service.api('/v1/operator-endpoint', { method: 'PUT', json: { url: `${ops.url}/ops?code=500` } });
    await db.query("UPDATE receiver SET max_attempts = 1 WHERE name = '/operator'");
    const eventsBefore = (await db.query('SELECT count(*)::int AS n FROM event')).rows[0].n;
    const c = await batch({ callbacks: [{ url: `${target.url}/z?code=410` }] });
    await completed(c.id);
    // the exhausted event and the batch's completion: two events, each delivered once and failed for good
    await waitFor(
      async () =>
        (await db.query("SELECT count(*)::int AS n FROM callback c JOIN batch b ON b.id = c.batch_id WHERE b.operator_event AND c.status = 'failed'")).rows[0]
          .n >= 2,
      10_000,
    );
    await settled();
    expect((await db.query('SELECT count(*)::int AS n FROM event')).rows[0].n).toBe(eventsBefore + 2);
    expect(await events('receiver.failing')).toEqual([]);
    await service.api('/v1/operator-endpoint', { method: 'PUT', json: { url: `${ops.url}/ops` } });
    await db.query("UPDATE receiver SET max_attempts = NULL, failing_since = NULL, last_failure_at = NULL WHERE name = '/operator'");
  });

  it('should send callback.exhausted once for each callback failed without a call because its URL answered 410 Gone, and complete its batch', async () => {
    // regression: the claim failed these (endpoint_gone) and no callback.exhausted was stored
    const url = `${target.url}/gone?code=410`;
    const first = await batch({ callbacks: [{ url }] });
    await completed(first.id);
    await waitFor(async () => (await db.query('SELECT count(*)::int AS n FROM gone_endpoint WHERE url = $1', [url])).rows[0].n === 1, 10_000);
    const called = target.requests.length;
    const later = await batch({ label: 'after the 410', callbacks: [{ url }, { url, externalId: 'two' }, { url, externalId: 'three' }] });
    await completed(later.id);
    const ids = [...first.callbacks, ...later.callbacks].map((c) => c.id);
    await waitFor(() => operatorCalls(ops, 'callback.exhausted').filter((c) => ids.includes(c.body.data.callbackId)).length >= 4, 10_000);
    await waitFor(() => operatorCalls(ops, 'batch.completed').some((c) => c.body.data.batchId === later.id), 10_000);
    await settled();
    expect(target.requests.length).toBe(called); // none of the later ones was sent
    const exhausted = operatorCalls(ops, 'callback.exhausted').filter((c) => ids.includes(c.body.data.callbackId));
    expect(exhausted.map((c) => c.body.data.callbackId).sort()).toEqual([...ids].sort()); // each exactly once
    expect(exhausted.find((c) => c.body.data.callbackId === first.callbacks[0].id)!.body.data).toMatchObject({ attempts: 1, lastStatusCode: 410 });
    for (const c of later.callbacks) {
      expect(exhausted.find((e) => e.body.data.callbackId === c.id)!.body.data).toMatchObject({
        batchId: later.id,
        url,
        attempts: 0,
        lastStatusCode: null,
        lastError: expect.stringMatching(/^endpoint_gone: /),
      });
    }
    const done = operatorCalls(ops, 'batch.completed').filter((c) => c.body.data.batchId === later.id);
    expect(done).toHaveLength(1);
    expect(done[0].body.data.counts).toMatchObject({ failed: 3, pending: 0, in_flight: 0 });
  });

  it('should send receiver.failing once for a run of failures, and receiver.disabled / receiver.enabled once per flip', async () => {
    await service.api('/v1/receivers/shop', { method: 'PUT', json: { url: `${target.url}/shop?code=503`, maxAttempts: 1 } });
    for (let i = 0; i < 3; i++) await completed((await batch({ callbacks: Array.from({ length: 5 }, () => ({ receiver: 'shop' })) })).id);
    await waitFor(() => operatorCalls(ops, 'receiver.failing').length >= 1, 10_000);
    await settled();
    expect(operatorCalls(ops, 'receiver.failing')).toHaveLength(1);
    expect(operatorCalls(ops, 'receiver.failing')[0].body.data).toMatchObject({ receiver: 'shop' });
    expect(operatorCalls(ops, 'callback.exhausted')).toHaveLength(15);

    await service.api('/v1/receivers/shop', { method: 'PUT', json: { disabled: true } });
    await service.api('/v1/receivers/shop', { method: 'PUT', json: { disabled: true } }); // no flip, no event
    await service.api('/v1/receivers/shop', { method: 'PUT', json: { disabled: false, url: `${target.url}/shop` } });
    await waitFor(() => operatorCalls(ops, 'receiver.enabled').length >= 1, 10_000);
    await settled();
    expect(operatorCalls(ops, 'receiver.disabled').map((c) => c.body.data)).toMatchObject([
      { receiver: 'shop', auto: false, reason: 'disabled through the API' },
    ]);
    expect(operatorCalls(ops, 'receiver.enabled')).toHaveLength(1);
    // a success ends the run of failures; the next failure is a new one
    await completed((await batch({ callbacks: [{ receiver: 'shop' }] })).id);
    await service.api('/v1/receivers/shop', { method: 'PUT', json: { url: `${target.url}/shop?code=503` } });
    await completed((await batch({ callbacks: [{ receiver: 'shop' }, { receiver: 'shop' }] })).id);
    await waitFor(() => operatorCalls(ops, 'receiver.failing').length >= 2, 10_000);
    expect(new Set(operatorCalls(ops, 'receiver.failing').map((c) => c.eventId)).size).toBe(2);
  });

  it('should send host.circuit_opened once when a host goes down and host.circuit_closed once when it answers again (admin key)', async () => {
    const down = await Receiver.start({ host: '127.0.0.4' });
    // a key that is not an admin, with an endpoint of its own: hosts are shared, it hears nothing of them
    const tenant = (await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'tenant' } })).key as string;
    expect((await service.api('/v1/operator-endpoint', { method: 'PUT', json: { url: `${target.url}/tenant-ops` }, key: tenant })).status).toBe(201);
    try {
      await down.down();
      const b = await batch({ callbacks: Array.from({ length: 12 }, () => ({ url: `${down.url}/h`, maxAttempts: 20, retryDelaysMs: [50] })) });
      await waitFor(() => operatorCalls(ops, 'host.circuit_opened').length >= 1, 10_000);
      // two probes after the 300 ms cooldowns fail and re-open it: the same outage, no new event
      const attempts = async () =>
        (await db.query('SELECT count(*)::int AS n FROM attempt a JOIN callback c ON c.id = a.callback_id WHERE c.batch_id = $1', [b.id])).rows[0].n;
      const opened = await attempts();
      await waitFor(async () => (await attempts()) >= opened + 2, 10_000);
      await settled();
      expect(operatorCalls(ops, 'host.circuit_opened')).toHaveLength(1);
      await down.up();
      await completed(b.id);
      await waitFor(() => operatorCalls(ops, 'host.circuit_closed').length >= 1, 10_000);
      await settled();
      expect(operatorCalls(ops, 'host.circuit_closed')).toHaveLength(1);
      expect(operatorCalls(ops, 'host.circuit_opened')[0].body.data).toMatchObject({ host: `http://127.0.0.4:${new URL(down.url).port}` });
      expect(operatorCalls(target).filter((c) => c.type.startsWith('host.'))).toEqual([]);
      expect((await db.query(`SELECT count(*)::int AS n FROM event e JOIN api_key k ON k.id = e.api_key_id WHERE k.name = 'tenant'`)).rows[0].n).toBe(0);
    } finally {
      await down.close();
    }
  });

  it('should send recovery.completed once its requeued callbacks settled', async () => {
    const b = await batch({ callbacks: [{ url: `${target.url}/r?failTimes=1&failCode=500`, maxAttempts: 1 }, { url: `${target.url}/r2?code=400` }] });
    await completed(b.id);
    const started = await service.api('/v1/recoveries', { method: 'POST', json: { batch: b.id } });
    expect(started.status).toBe(202);
    const { id } = await jsonOf(started);
    await waitFor(() => operatorCalls(ops, 'recovery.completed').length >= 1, 10_000);
    await settled();
    const calls = operatorCalls(ops, 'recovery.completed');
    expect(calls).toHaveLength(1);
    expect(calls[0].body.data).toMatchObject({ recoveryId: id, state: 'done', matched: 2, requeued: 2, failed: 1 });
  });

  // Regression: it answered 201 where its document says 200 (the receiver's rotate answers 200).
  it('should rotate the endpoint’s secret with a 200, both secrets listed', async () => {
    const rotated = await service.api('/v1/operator-endpoint/secret/rotate', { method: 'POST' });
    expect(rotated.status).toBe(200);
    const body = await jsonOf(rotated);
    expect(body.secrets).toHaveLength(2);
    expect(body.secrets[1].secret).toBe(secret);
  });
});
