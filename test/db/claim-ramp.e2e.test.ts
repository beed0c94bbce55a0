import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkerService } from '../../src/dispatch/worker.service.js';
import { connect } from '../support/database.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService, jsonOf } from '../support/service.js';

const CALLS = 2_000;
const TIMEOUT_MS = 10_000;
const LEASE_MARGIN_MS = 30_000;

/**
 * A large batch on an idle worker whose window and claim batch could take it in one
 * statement. Nothing is sent until a claim returns, and claiming thousands of rows
 * takes Postgres a good part of a second, so the claims start small and grow: the
 * first calls go out while the rest of the batch is still being claimed.
 */
describe(WorkerService.name, () => {
  let service: TestService;
  let db: pg.Client;
  let receiver: Receiver;

  beforeAll(async () => {
    service = await startTestService({
      dispatchConcurrency: CALLS * 2,
      dispatchClaimBatch: CALLS * 2,
      hostMaxInFlight: CALLS * 2,
      dispatchLeaseMarginMs: LEASE_MARGIN_MS,
      shutdownGraceMs: 300,
    });
    db = await connect(service.databaseUrl);
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
    await receiver?.close();
  });

  it('should start sending a large batch before all of it is claimed (regression: one claim of every row first)', async () => {
    const callbacks = Array.from({ length: CALLS }, (_, i) => ({ url: `${receiver.url}/ramp/${i}?sleep=2000`, timeoutMs: TIMEOUT_MS }));
    const res = await service.api('/v1/batches', { method: 'POST', json: { callbacks } });
    expect(res.status).toBe(202);
    const batchId = (await jsonOf(res)).id as string;

    // While the receiver holds every call, each claimed row still carries the lease
    // its claim statement gave it: now() of that statement + timeout + margin.
    const claims = await waitFor(
      async () => {
        const { rows } = await db.query(
          `SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending,
                count(DISTINCT lease_expires_at)::int AS statements,
                extract(epoch FROM max(lease_expires_at)) * 1000 - $2::int AS "lastClaimAt"
         FROM callback WHERE batch_id = $1`,
          [batchId, TIMEOUT_MS + LEASE_MARGIN_MS],
        );
        return rows[0].pending === 0 ? rows[0] : undefined;
      },
      10_000,
      10,
    );

    const done = await waitFor(async () => {
      const b = await service.apiJson(`/v1/batches/${batchId}`);
      return b.status === 'completed' ? b : undefined;
    }, 20_000);
    expect(done.counts).toMatchObject({ succeeded: CALLS, failed: 0 });
    const firstArrival = Math.min(...receiver.requests.filter((r) => r.url.startsWith('/ramp/')).map((r) => r.arrivedAt));

    expect(claims.statements).toBeGreaterThanOrEqual(3);
    expect(firstArrival).toBeLessThan(Number(claims.lastClaimAt));
  });
});
