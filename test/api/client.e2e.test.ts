import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { ApiError, unwrap, type Schemas } from '../../src/client/api.client.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';

/**
 * The generated client (openapi-typescript types of the served document, checked
 * against it in openapi.test.ts, over openapi-fetch) does what an integrator does
 * first: create a batch, read it, list its callbacks, read the latency history;
 * every answer typed by the document (the expectTypeOf lines are checked by
 * `npm run typecheck`), and errors typed as the error body.
 */
describe('generated API client', () => {
  let service: TestService;
  let receiver: Receiver;

  beforeAll(async () => {
    [service, receiver] = await Promise.all([startTestService(), Receiver.start()]);
  });
  afterAll(async () => {
    await Promise.all([service?.dispose(), receiver?.close()]);
  });

  it('should create a batch, read it, list its callbacks and read the latency history with typed results', async () => {
    const { client } = service;
    const created = await client.POST('/v1/batches', {
      body: {
        label: 'typed',
        callbacks: [
          { url: `${receiver.url}/ok?n=1`, externalId: 'a' },
          { url: `${receiver.url}/ok?n=2&sleep=120`, externalId: 'b' },
        ],
      },
    });
    expect(created.response.status).toBe(202);
    expectTypeOf(created.data).toEqualTypeOf<Schemas['AcceptedBatchDto'] | undefined>();
    const batch = created.data!;
    expect(batch.callbacks.map((c) => c.externalId)).toEqual(['a', 'b']);

    const read = await waitFor(async () => {
      const { data } = await client.GET('/v1/batches/{id}', { params: { path: { id: batch.id } } });
      return data?.status === 'completed' ? data : undefined;
    });
    expectTypeOf(read.status).toEqualTypeOf<'pending' | 'running' | 'completed'>();
    expectTypeOf(read.makespanMs).toEqualTypeOf<number | null>();
    expect(read).toMatchObject({ id: batch.id, label: 'typed', total: 2, counts: { succeeded: 2, failed: 0 } });
    // first attempt's start to last attempt's end: at least the 120 ms call, and what the two times say
    expect(read.makespanMs).toBeGreaterThanOrEqual(120);
    expect(read.makespanMs).toBe(Date.parse(read.lastAttemptEndAt!) - Date.parse(read.firstAttemptAt!));

    const page = await unwrap(client.GET('/v1/batches/{id}/callbacks', { params: { path: { id: batch.id }, query: { status: 'succeeded', limit: 10 } } }));
    expectTypeOf(page.items[0].status).toEqualTypeOf<'pending' | 'in_flight' | 'succeeded' | 'failed' | 'cancelled'>();
    expect(page.items.map((c) => c.externalId)).toEqual(['a', 'b']);
    expect(page.nextCursor).toBeNull();

    const one = await unwrap(client.GET('/v1/callbacks/{id}', { params: { path: { id: page.items[0].id } } }));
    expectTypeOf(one.attempts[0].phases.connectMs).toEqualTypeOf<number | null>();
    expect(one.attempts).toHaveLength(1);
    expect(one.attempts[0]).toMatchObject({ number: 1, statusCode: 200, outcome: 'success' });

    const history = await unwrap(client.GET('/v1/history/latency', { params: { query: { batch: batch.id, bucket: '1m' } } }));
    expectTypeOf(history.items[0].p99).toEqualTypeOf<number>();
    expect(history.bucket).toBe('1m');
    expect(history.items.reduce((n, b) => n + b.count, 0)).toBe(2);
    expect(history.items.reduce((n, b) => n + b.ok, 0)).toBe(2);
  });

  it('should type a refusal as the error body, with the code and request id the service sent', async () => {
    const { data, error, response } = await service.client.GET('/v1/batches/{id}', { params: { path: { id: '0190a5b2-0000-7000-8000-000000000000' } } });
    expect(data).toBeUndefined();
    expect(response.status).toBe(404);
    expectTypeOf(error).toEqualTypeOf<Schemas['ErrorDto'] | undefined>();
    expect(error).toMatchObject({ code: 'not_found', requestId: response.headers.get('x-request-id') });

    const refused = await unwrap(service.clientWith(null).GET('/v1/batches', {})).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ status: 401, code: 'unauthorized' });
  });
});
