import type pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OperatorEndpointService } from '../../src/operator-events/operator-endpoint.service.js';
import { connect, createTestDatabase, type TestDatabase } from '../support/database.js';
import { spawnService, type ServiceProcess } from '../support/process.js';
import { closedPort, Receiver } from '../support/receiver.js';
import { jsonOf, startServices, startTestService, stopAll, waitFor, type TestService } from '../support/service.js';

/**
 * An API and three workers on one database, one of them a real process SIGKILLed right
 * after it stamps a batch complete, and a fourth started (the API and the other workers
 * run in this process). Each operator event is counted at a real receiver by its own id
 * (webhook-event-id), and in the event table.
 */
describe(`${OperatorEndpointService.name} across three workers and a kill`, () => {
  let database: TestDatabase;
  let db: pg.Client;
  let ops: Receiver;
  let target: Receiver;
  let services: TestService[] = [];
  let killed: ServiceProcess | undefined;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = await connect(database.url);
    [ops, target] = await Promise.all([Receiver.start({ host: '127.0.0.2' }), Receiver.start({ host: '127.0.0.3' })]);
  });
  afterAll(async () => {
    killed?.kill('SIGKILL');
    await killed?.exited;
    await stopAll(services);
    await db?.end();
    await Promise.all([ops?.close(), target?.close()]);
    await database?.drop();
  });

  it('should send each operator event once per cause (batch.completed, callback.exhausted, receiver.failing, host.circuit_opened) with three workers and one SIGKILLed after a stamp', async () => {
    // HTTP_TIMEOUT_MS and the lease margin short: the killed worker's rows are reaped within ~3 s
    // a host that refuses connections: its breaker opens after 3 in a row (then a probe each 300 ms)
    const settings = { dispatchPollMs: 100, httpTimeoutMs: 2000, dispatchLeaseMarginMs: 1000, hostBreakerFailures: 3, hostBreakerCooldownMs: 300 };
    const workerSettings = { ...settings, role: 'worker' as const, dispatchConcurrency: 8, hostMaxInFlight: 1000 };
    const refused = `http://127.0.0.1:${await closedPort()}`;
    services = await startServices(database.url, [{ ...settings, role: 'api' }, workerSettings, workerSettings]);
    const api = services[0];
    killed = await spawnService({
      DATABASE_URL: database.url,
      DISPATCH_POLL_MS: '100',
      HTTP_TIMEOUT_MS: '2000',
      DISPATCH_LEASE_MARGIN_MS: '1000',
      HOST_BREAKER_FAILURES: '3',
      HOST_BREAKER_COOLDOWN_MS: '300',
      ROLE: 'worker',
      LOG_LEVEL: 'log',
      DISPATCH_CONCURRENCY: '8',
      HOST_MAX_IN_FLIGHT: '1000',
    });
    const worker = killed;
    const call = async (path: string, init: { method: string; json: unknown }) => {
      const res = await api.api(path, init);
      return { status: res.status, body: await jsonOf(res) };
    };

    const put = await call('/v1/operator-endpoint', { method: 'PUT', json: { url: `${ops.url}/ops?sleep=5` } });
    expect(put.status).toBe(201);
    const secret: string = put.body.secrets[0].secret;
    expect((await call('/v1/receivers/shop', { method: 'PUT', json: { url: `${target.url}/shop?code=503`, maxAttempts: 1 } })).status).toBe(201);

    // 40 batches due at one moment: 30 calls each that succeed, 2 that fail for good, 1 to the failing receiver, and
    // in the first 8 one to the host that refuses connections
    const runAt = new Date(Date.now() + 1500).toISOString();
    const batchIds: string[] = [];
    const exhaustedIds: string[] = [];
    for (let b = 0; b < 40; b++) {
      const callbacks = [
        ...Array.from({ length: 30 }, (_, i) => ({ url: `${target.url}/ok/${b}/${i}?sleep=20`, runAt })),
        ...Array.from({ length: 2 }, (_, i) => ({ url: `${target.url}/bad/${b}/${i}?code=500&sleep=20`, maxAttempts: 1, runAt })),
        { receiver: 'shop', runAt },
        ...(b < 8 ? [{ url: `${refused}/down/${b}`, maxAttempts: 1, runAt }] : []),
      ];
      const { status, body } = await call('/v1/batches', { method: 'POST', json: { label: `b${b}`, callbacks } });
      expect(status).toBe(202);
      batchIds.push(body.id);
      exhaustedIds.push(...body.callbacks.slice(30).map((c: { id: string }) => c.id));
    }

    // the process worker is killed right after its first stamp of a batch complete
    await waitFor(() => /batch_completed/.test(worker.output()), 20_000, 2);
    worker.kill('SIGKILL');
    await worker.exited;
    const killedAt = Date.now();
    services.push(await startTestService(workerSettings, database.url));

    const count = async (sql: string) => (await db.query(sql)).rows[0].n as number;
    await waitFor(async () => (await count(`SELECT count(*)::int AS n FROM batch WHERE NOT operator_event AND completed_at IS NULL`)) === 0, 60_000, 200);
    // every operator delivery settled (the killed worker's reaped and sent again), then a moment for strays
    await waitFor(
      async () =>
        (await count(`SELECT count(*)::int AS n FROM callback c JOIN batch b ON b.id = c.batch_id WHERE b.operator_event AND c.status <> 'succeeded'`)) === 0,
      30_000,
      200,
    );
    // and every answered call of theirs recorded at the receiver (the killed worker's may be there with none stored)
    const answered = await count(
      `SELECT count(*)::int AS n FROM attempt a JOIN callback c ON c.id = a.callback_id JOIN batch b ON b.id = c.batch_id
       WHERE b.operator_event AND a.status_code IS NOT NULL AND c.host = '${new URL(ops.url).origin}'`,
    );
    await waitFor(() => ops.requests.length >= answered, 5_000, 20);

    const deliveries = new Map<string, { type: string; webhookIds: Set<string>; n: number; firstAt: number; data: Record<string, unknown> }>();
    for (const r of ops.requests) {
      const id = String(r.headers['webhook-event-id']);
      const d = deliveries.get(id) ?? {
        type: String(r.headers['webhook-event-type']),
        webhookIds: new Set(),
        n: 0,
        firstAt: r.arrivedAt,
        data: JSON.parse(r.body).data,
      };
      d.webhookIds.add(String(r.headers['webhook-id']));
      d.firstAt = Math.min(d.firstAt, r.arrivedAt);
      d.n++;
      deliveries.set(id, d);
      new Webhook(secret).verify(r.body, r.headers as Record<string, string>, { jsonParse: false }); // throws when not signed with the endpoint's secret
    }
    const ofType = (type: string) => [...deliveries.entries()].filter(([, d]) => d.type === type);

    // batch.completed: one event per batch, named by it, at the receiver and in the table
    expect(
      ofType('batch.completed')
        .map(([id]) => id)
        .sort(),
    ).toEqual(batchIds.map((id) => `batch.completed:${id}`).sort());
    expect(
      ofType('batch.completed')
        .map(([, d]) => d.data.batchId)
        .sort(),
    ).toEqual([...batchIds].sort());
    expect(await count(`SELECT count(*)::int AS n FROM event WHERE type = 'batch.completed'`)).toBe(40);
    // callback.exhausted: one per callback failed for good (2 per batch, the receiver's, the refused host's)
    expect(
      ofType('callback.exhausted')
        .map(([, d]) => d.data.callbackId)
        .sort(),
    ).toEqual([...exhaustedIds].sort());
    expect(await count(`SELECT count(*)::int AS n FROM event WHERE type = 'callback.exhausted'`)).toBe(128);
    // host.circuit_opened: once, though three workers' reports of its failures landed, and its probes failed again
    expect(ofType('host.circuit_opened').map(([, d]) => d.data.host)).toEqual([refused]);
    // receiver.failing: once, though 40 failures landed from several workers
    expect(ofType('receiver.failing')).toHaveLength(1);
    expect(await count(`SELECT count(*)::int AS n FROM event WHERE type = 'receiver.failing'`)).toBe(1);
    expect(deliveries.size).toBe(40 + 128 + 1 + 1);
    // a redelivery (an operator call in flight on the killed worker) keeps its webhook-id; nothing else arrives twice
    for (const [id, d] of deliveries) expect(d.webhookIds.size, id).toBe(1);
    // Only what the killed worker had sent and not written back is sent again: each event delivered twice was
    // first delivered before the kill (give or take the 250 ms a request written before it may take to be read).
    // (A count bound said the same less exactly: its window of 8, plus the
    // outcomes waiting for a write-back, which a busy machine delays; CI runs saw 11 and more.)
    const redelivered = [...deliveries.entries()].filter(([, d]) => d.n > 1);
    for (const [id, d] of redelivered) expect(d.firstAt, `${id} first delivered after the kill`).toBeLessThan(killedAt + 250);
    expect(redelivered.length).toBeLessThan(deliveries.size / 2);

    // the batches' last callbacks were written back by different workers: the stamps raced
    const spread = await count(`
      SELECT count(*)::int AS n FROM (
        SELECT c.batch_id FROM callback c JOIN attempt a ON a.callback_id = c.id JOIN batch b ON b.id = c.batch_id
        WHERE NOT b.operator_event GROUP BY c.batch_id HAVING count(DISTINCT a.worker) >= 2) s`);
    expect(spread).toBeGreaterThanOrEqual(10);
    // No deadlock on the way: write-backs storing operator events, claims and the ingest lock receivers and
    // hosts in orders that cannot close a cycle (once ~1 s each, enough in a row to outlast a lease)
    const deadlocks = await count(`SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()`);
    expect(deadlocks).toBe(0);
    console.log(
      `operator events: ${deliveries.size} events, ${redelivered.length} delivered twice (killed worker), ${spread}/40 batches written back by 2+ workers`,
    );
  }, 120_000);
});
