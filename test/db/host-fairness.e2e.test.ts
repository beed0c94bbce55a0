import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkerService } from '../../src/dispatch/worker.service.js';
import { connect } from '../support/database.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService, jsonOf } from '../support/service.js';

const WINDOW = 50;
const CAP = 20;
/**
 * How long the slow host holds a call: longer than the fast host's whole batch takes
 * (0.5 s alone, 2–4 s with other files beside it, 6.8 s once). The test waits for it only
 * when it fails: the service hands the slow calls back as it stops.
 */
const SLOW_MS = 20_000;

/**
 * One slow host never holds the others up: host A (127.0.0.2) answers after 5 s and
 * has three times its cap due; host B (127.0.0.3) answers at once. A holds its cap of
 * the window and no more, and B's batch is done while every call of A still waits
 * for its answer. How B's throughput compares with B alone is a figure of the slow
 * tier (test/slow/host-fairness-throughput.test.ts).
 */
describe(WorkerService.name, () => {
  let service: TestService;
  let db: pg.Client;
  let slow: Receiver;
  let fast: Receiver;

  beforeAll(async () => {
    [service, slow, fast] = await Promise.all([
      startTestService({ dispatchConcurrency: WINDOW, hostMaxInFlight: CAP, shutdownGraceMs: 300 }),
      Receiver.start({ host: '127.0.0.2' }),
      Receiver.start({ host: '127.0.0.3' }),
    ]);
    db = await connect(service.databaseUrl);
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
    await Promise.all([slow?.close(), fast?.close()]);
  });

  const sendBatch = async (url: string, n: number, extra: Record<string, unknown> = {}) => {
    const res = await service.api('/v1/batches', {
      method: 'POST',
      json: { callbacks: Array.from({ length: n }, (_, i) => ({ url: `${url}&i=${i}`, ...extra })) },
    });
    expect(res.status).toBe(202);
    return (await jsonOf(res)) as { id: string };
  };

  it('should send a fast host its whole batch while a slow host holds only its cap of the window', async () => {
    await sendBatch(`${slow.url}/slow?sleep=${SLOW_MS}`, 3 * CAP, { timeoutMs: 2 * SLOW_MS, maxAttempts: 1 });
    await waitFor(() => slow.active >= CAP || undefined, 5000, 10);
    let slowInFlight = 0;
    const { id } = await sendBatch(`${fast.url}/fast?sleep=5`, 200);
    await waitFor(
      async () => {
        const { rows } = await db.query('SELECT coalesce(max(in_flight), 0)::int AS n FROM host WHERE host = $1', [slow.url]);
        slowInFlight = Math.max(slowInFlight, rows[0].n);
        return (await service.apiJson(`/v1/batches/${id}`)).status === 'completed';
      },
      SLOW_MS,
      20,
    );
    // B done before any call of A was answered: nothing of B waited behind A
    expect(slow.requests).toHaveLength(0);
    expect(fast.requests.filter((r) => r.url.startsWith('/fast'))).toHaveLength(200);
    expect(slow.maxActive).toBe(CAP);
    expect(slowInFlight).toBe(CAP);
  });
});
