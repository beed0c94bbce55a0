import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProducerService } from '../../src/dispatch/producer.service.js';
import { connect, createTestDatabase } from '../support/database.js';
import { spawnService, type ServiceProcess } from '../support/process.js';
import { Receiver, type ReceivedRequest } from '../support/receiver.js';
import { jsonOf, startServices, stopAll, waitFor, type TestService } from '../support/service.js';

const KEYS = 20;
const PER_KEY = 40;

/**
 * Ordered delivery across worker services on one database, one of them a real process
 * killed with SIGKILL midway; the API and the two other workers run in this process.
 */
describe(`${ProducerService.name} ordering across workers and crashes`, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: pg.Client;
  const receivers: Receiver[] = [];
  let services: TestService[] = [];
  let killed: ServiceProcess | undefined;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = await connect(database.url);
    for (let i = 0; i < 4; i++) receivers.push(await Receiver.start({ host: `127.0.0.${30 + i}` }));
  });
  afterAll(async () => {
    killed?.kill('SIGKILL');
    await killed?.exited;
    await stopAll(services);
    await db?.end();
    for (const r of receivers) await r.close();
    await database?.drop();
  });

  it('should deliver each ordering key in order, never two at once, with three workers and one killed', async () => {
    // Leases of 2 s (a 1 s timeout and the margin's floor of 1 s): a killed worker's rows come back soon.
    const settings = { dispatchPollMs: 100, retryDelaysMs: [50], retryJitterPermille: 0, dispatchLeaseMarginMs: 1000 };
    const worker = { ...settings, role: 'worker' as const, dispatchConcurrency: 20 };
    services = await startServices(database.url, [{ ...settings, role: 'api' }, worker, worker]);
    const api = services[0];
    killed = await spawnService({
      DATABASE_URL: database.url,
      DISPATCH_POLL_MS: '100',
      LOG_LEVEL: 'error',
      RETRY_DELAYS_MS: '50',
      RETRY_JITTER_PERMILLE: '0',
      DISPATCH_LEASE_MARGIN_MS: '1000',
      ROLE: 'worker',
      DISPATCH_CONCURRENCY: '20',
    });
    const victim = killed;

    // Acceptance order: two batches, each key's callbacks interleaved with the others'. Every
    // fifth first try answers 503; each call is held 15 ms, so overlaps would show.
    const accepted: string[][] = Array.from({ length: KEYS }, () => []);
    for (let b = 0; b < 2; b++) {
      const callbacks = Array.from({ length: (KEYS * PER_KEY) / 2 }, (_, i) => {
        const key = i % KEYS;
        return {
          url: `${receivers[key % receivers.length].url}/o/${b}/${i}?sleep=15${i % 5 === 0 ? '&failTimes=1' : ''}`,
          orderingKey: `key-${key}`,
          timeoutMs: 1000,
        };
      });
      const res = await api.api('/v1/batches', { method: 'POST', json: { callbacks } });
      expect(res.status).toBe(202);
      (await jsonOf(res)).callbacks.forEach((c: { id: string }, i: number) => accepted[i % KEYS].push(c.id));
    }

    const received = () => receivers.reduce((n, r) => n + r.requests.length, 0);
    await waitFor(() => received() > (KEYS * PER_KEY) / 3, 60_000, 20);
    // Kill the process worker once it has written back some attempts and while it holds leases (its pid is in
    // its lease owner name), so the crash lands mid-work: killed before its first write-back, it had sent none.
    await waitFor(
      async () => {
        const written = await db.query(`SELECT 1 FROM attempt WHERE worker LIKE '%:' || $1 || ':%' LIMIT 1`, [victim.proc.pid]);
        if (written.rows.length === 0) return false;
        const { rows } = await db.query(`SELECT DISTINCT lease_owner FROM callback WHERE status = 'in_flight'`);
        return rows.some((r) => String(r.lease_owner).includes(`:${victim.proc.pid}:`));
      },
      30_000,
      5,
    );
    victim.kill('SIGKILL');
    await victim.exited;

    await waitFor(
      async () => {
        const { rows } = await db.query(`SELECT count(*)::int AS n FROM callback WHERE status = 'succeeded'`);
        return rows[0].n === KEYS * PER_KEY;
      },
      120_000,
      200,
    );

    const requests: ReceivedRequest[] = receivers.flatMap((r) => r.requests);
    const end = (q: ReceivedRequest) => q.startedAt + (q.handledMs ?? 0);
    for (let k = 0; k < KEYS; k++) {
      const byId = (id: string) => requests.filter((q) => q.headers['webhook-id'] === id);
      const ids = accepted[k];
      for (let i = 1; i < ids.length; i++) {
        const before = byId(ids[i - 1]);
        const next = byId(ids[i]);
        expect(next.length, `key-${k}: callback ${i} never reached the receiver`).toBeGreaterThan(0);
        // Every request for the next one came after the last request for the one before it ended.
        expect(Math.min(...next.map((q) => q.arrivedAt)), `key-${k}: callback ${i} overlapped or overtook ${i - 1}`).toBeGreaterThanOrEqual(
          Math.max(...before.map(end)) - 1,
        );
      }
    }
    // The killed worker sent some, and the others took its callbacks on once its leases ran out.
    const workersSeen = (await db.query('SELECT count(DISTINCT worker)::int AS n FROM attempt')).rows[0].n;
    expect(workersSeen).toBeGreaterThanOrEqual(2);
    expect(
      (await db.query(`SELECT count(*)::int AS n FROM attempt WHERE worker LIKE '%:' || $1 || ':%'`, [victim.proc.pid])).rows[0].n,
      'attempts of the killed worker',
    ).toBeGreaterThan(0);
  }, 240_000);
});
