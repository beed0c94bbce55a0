import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostLimitsRepository } from '../../src/hosts/limits/host-limits.repository.js';
import { HostLimitsService } from '../../src/hosts/limits/host-limits.service.js';
import { connect } from '../support/database.js';
import { Receiver } from '../support/receiver.js';
import { jsonOf, startTestService, waitFor, type TestService } from '../support/service.js';

const THRESHOLD = 3;
/** Long: a pause that wrongly reaches the other key lasts far past the test's wait. */
const COOLDOWN_MS = 30_000;

/**
 * One key's timeouts against a host that answers (it answers in 400 ms; the key asks for
 * 1 ms) pause that key's calls to the host, never another key's: the breaker state of
 * call-dependent failures (timeouts, broken connections) is kept per key and host.
 */
describe(`${HostLimitsService.name} per key`, () => {
  let service: TestService;
  let receiver: Receiver;
  let db: pg.Client;
  let tenant: string;

  beforeAll(async () => {
    service = await startTestService({ hostBreakerFailures: THRESHOLD, hostBreakerCooldownMs: COOLDOWN_MS });
    receiver = await Receiver.start({ host: '127.0.0.5' });
    await receiver.warmUp();
    db = await connect(service.databaseUrl);
    tenant = (await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'attacker', allowPrivateNetworks: true } })).key;
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
    await receiver?.close();
  });

  async function send(key: string, callbacks: unknown[]): Promise<{ id: string; callbacks: Array<{ id: string }> }> {
    const res = await service.api('/v1/batches', { method: 'POST', json: { callbacks }, key });
    expect(res.status).toBe(202);
    return jsonOf(res);
  }
  const done = (key: string, id: string, ms = 10_000) =>
    waitFor(async () => {
      const b = await service.apiJson(`/v1/batches/${id}`, { key });
      return b.status === 'completed' ? b : undefined;
    }, ms);

  it("should keep another key's calls going to a host that answers them while one key's 1 ms timeouts pause its own", async () => {
    // 12 callbacks with timeoutMs 1 to a host that answers in 400 ms: each a timeout
    const attack = await send(
      tenant,
      Array.from({ length: 12 }, (_, i) => ({ url: `${receiver.url}/slow/${i}?sleep=400`, timeoutMs: 1, maxAttempts: 1 })),
    );
    await done(tenant, attack.id);
    expect((await service.apiJson(`/v1/batches/${attack.id}`, { key: tenant })).counts).toMatchObject({ failed: 12 });

    // the attacker's own next call to the host waits: its breaker for the host is open
    const own = await send(tenant, [{ url: `${receiver.url}/own?sleep=400`, maxAttempts: 1 }]);
    const waiting = await waitFor(async () => {
      const c = await service.apiJson(`/v1/callbacks/${own.callbacks[0].id}`, { key: tenant });
      return c.waiting?.reason === 'host_paused' ? c : undefined;
    }, 5000);
    expect(waiting.status).toBe('pending');

    // the other key's call to the same host goes at once and is answered
    const started = Date.now();
    const other = await send(service.key, [{ url: `${receiver.url}/other?sleep=400`, maxAttempts: 1 }]);
    const b = await done(service.key, other.id, 5000);
    expect(b.counts).toMatchObject({ succeeded: 1 });
    expect(Date.now() - started).toBeLessThan(3000);
    expect(receiver.requests.filter((r) => r.url === '/other?sleep=400')).toHaveLength(1);
    // and the attacker's stays unsent, paused for the cool-down
    expect(receiver.requests.filter((r) => r.url.startsWith('/own'))).toHaveLength(0);
    expect((await service.apiJson(`/v1/callbacks/${own.callbacks[0].id}`, { key: tenant })).status).toBe('pending');
  });
});

describe(`${HostLimitsService.name} per key, after the cool-down`, () => {
  const COOL = 500;
  let service: TestService;
  let receiver: Receiver;
  let db: pg.Client;

  beforeAll(async () => {
    service = await startTestService({ hostBreakerFailures: THRESHOLD, hostBreakerCooldownMs: COOL, dispatchPollMs: 100 });
    receiver = await Receiver.start({ host: '127.0.0.6' });
    await receiver.warmUp();
    receiver.requests.length = 0;
    db = await connect(service.databaseUrl);
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
    await receiver?.close();
  });

  it("should let one probe of the paused key go when its cool-down is over, and the key's other calls once it is answered", async () => {
    const post = async (callbacks: unknown[]) => jsonOf(await service.api('/v1/batches', { method: 'POST', json: { callbacks } }));
    const slow = await post(Array.from({ length: THRESHOLD }, (_, i) => ({ url: `${receiver.url}/slow/${i}?sleep=300`, timeoutMs: 1, maxAttempts: 1 })));
    await waitFor(async () => (await service.apiJson(`/v1/batches/${slow.id}`)).status === 'completed');
    const paused = await waitFor(async () => (await db.query(`SELECT state FROM host_key_breaker WHERE state = 'open'`)).rows[0], 5000, 10);
    expect(paused.state).toBe('open');

    const after = await post(Array.from({ length: 3 }, (_, i) => ({ url: `${receiver.url}/after/${i}?sleep=50`, maxAttempts: 1 })));
    await waitFor(async () => (await service.apiJson(`/v1/batches/${after.id}`)).status === 'completed', 10_000);
    const arrivals = receiver.requests.filter((r) => r.url.startsWith('/after/')).sort((a, b) => a.arrivedAt - b.arrivedAt);
    expect(arrivals).toHaveLength(3);
    // the probe went alone: the next call arrived after the probe was answered
    expect(arrivals[1].arrivedAt).toBeGreaterThanOrEqual(arrivals[0].startedAt + (arrivals[0].handledMs ?? 0));
    // answered: the key's breaker is clean again, so its row is gone
    await waitFor(async () => (await db.query('SELECT 1 FROM host_key_breaker')).rowCount === 0, 2000, 20);
  });

  it('should delete key breakers nobody wrote for the idle time whose pause is over, and keep the others', async () => {
    const key = (await db.query(`SELECT id FROM api_key LIMIT 1`)).rows[0].id;
    await db.query(
      `INSERT INTO host_key_breaker (host, api_key_id, state, failures, opened_at, open_until, updated_at) VALUES
         ('http://idle.example:80', $1, 'open', 3, now() - interval '2 hours', now() - interval '2 hours', now() - interval '2 hours'),
         ('http://counting.example:80', $1, 'closed', 1, NULL, NULL, now() - interval '2 hours'),
         ('http://paused.example:80', $1, 'open', 3, now() - interval '2 hours', now() + interval '1 hour', now() - interval '2 hours'),
         ('http://recent.example:80', $1, 'open', 3, now(), now() - interval '1 second', now())`,
      [key],
    );
    // The running leader deletes them on its own timer too (the same statement): the two are deleted once, by either.
    expect(await service.app.get(HostLimitsRepository).deleteIdleKeyBreakers(3_600_000)).toBeLessThanOrEqual(2);
    const left = (await db.query(`SELECT host FROM host_key_breaker ORDER BY host`)).rows.map((r) => r.host);
    expect(left).toEqual(['http://paused.example:80', 'http://recent.example:80']);
    await db.query(`DELETE FROM host_key_breaker`);
  });
});
