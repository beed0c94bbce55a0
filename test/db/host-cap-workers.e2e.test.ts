import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClaimRepository } from '../../src/dispatch/claim.repository.js';
import { connect, createTestDatabase } from '../support/database.js';
import { Receiver } from '../support/receiver.js';
import { startServices, stopAll, waitFor, type TestService, jsonOf } from '../support/service.js';

const WORKERS = 3;
const CAP = 4;
const CALLS = 60;

/**
 * The per-host cap is per destination, not per process: three worker services on
 * one database never have more than HOST_MAX_IN_FLIGHT calls at a receiver at once.
 * Tolerance: none while leases hold (the claim reads the host's in-flight count
 * under its row lock); see ARCHITECTURE.md "Per-host limits across workers".
 */
describe(ClaimRepository.name, () => {
  let services: TestService[] = [];
  let db: pg.Client;
  let drop: () => Promise<void>;
  let receiver: Receiver;

  beforeAll(async () => {
    const database = await createTestDatabase();
    drop = database.drop;
    services = await startServices(database.url, Array(WORKERS).fill({ hostMaxInFlight: CAP, dispatchConcurrency: 50 }));
    db = await connect(database.url);
    receiver = await Receiver.start({ host: '127.0.0.7' });
  });
  afterAll(async () => {
    await db?.end();
    await stopAll(services);
    await receiver?.close();
    await drop?.();
  });

  it("should keep three workers together within one host's cap", async () => {
    // Three batches, one through each service's API, so every worker is woken at once.
    const batches = await Promise.all(
      services.map(async (s, k) => {
        const callbacks = Array.from({ length: CALLS / WORKERS }, (_, i) => ({ url: `${receiver.url}/w${k}/${i}?sleep=100` }));
        const res = await s.api('/v1/batches', { method: 'POST', json: { callbacks } });
        expect(res.status).toBe(202);
        return (await jsonOf(res)).id as string;
      }),
    );
    const started = Date.now();
    for (const id of batches) {
      await waitFor(async () => (await services[0].apiJson(`/v1/batches/${id}`)).status === 'completed', 20_000, 50);
    }
    const elapsed = Date.now() - started;

    const { rows } = await db.query(
      `SELECT a.worker, count(*)::int AS n FROM attempt a JOIN callback c ON c.id = a.callback_id
       WHERE c.batch_id = ANY($1) AND a.outcome = 'success' GROUP BY a.worker`,
      [batches],
    );
    console.log(
      `${WORKERS} workers, cap ${CAP}: receiver saw at most ${receiver.maxActive} at once; ${CALLS} calls of 100 ms in ${elapsed} ms; per worker ${rows.map((r) => r.n).join('/')}`,
    );
    expect(rows.reduce((s, r) => s + r.n, 0)).toBe(CALLS);
    expect(receiver.requests).toHaveLength(CALLS);
    expect(receiver.maxActive).toBeLessThanOrEqual(CAP);
    expect(receiver.maxActive).toBe(CAP);
    // How the calls split between workers is not asserted: the worker holding all of a
    // host's slots writes back at once and claims again within milliseconds, so it
    // usually keeps the slots, while the others find the host full (the cap holding
    // across workers) and look again every HOST_RECHECK_MS. Splits seen: 60/0, 49/11.
    // 15 waves of 100 ms at best; slots pass between workers through the database.
    expect(elapsed).toBeLessThan(6000);
    const { rows: host } = await db.query('SELECT in_flight FROM host WHERE host = $1', [receiver.url]);
    expect(host[0].in_flight).toBe(0);
  });
});
