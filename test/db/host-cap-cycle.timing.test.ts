import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkerService } from '../../src/dispatch/worker.service.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService, jsonOf } from '../support/service.js';

const CAP = 20;
const CALLS = 400;

/**
 * One destination at its cap, answering at once. A slot comes free only when its
 * outcome is written back (and then claimed again), so the worker holding all of a
 * host's slots writes back when the host's calls are all done, not at the first
 * one: each write-back and claim then moves a whole cap's worth of rows. Writing back
 * at the first finished call split every cycle into ~10-row write-backs and claims
 * (~2,260 calls/s against ~2,900 on the bench machine).
 */
describe(WorkerService.name, () => {
  let service: TestService;
  let receiver: Receiver;

  beforeAll(async () => {
    service = await startTestService({ dispatchConcurrency: 200, hostMaxInFlight: CAP, shutdownGraceMs: 300 });
    receiver = await Receiver.start({ host: '127.0.0.4' });
    await receiver.warmUp();
  });
  afterAll(async () => {
    await service?.dispose();
    await receiver?.close();
  });

  /** Write-back statements and the rows they carried so far, from the service's own metrics. */
  async function writeBackTotals(): Promise<{ statements: number; rows: number }> {
    const text = await (await service.api('/metrics')).text();
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    return { statements: value('dispatch_writeback_duration_seconds_count'), rows: value('dispatch_written_rows_total') };
  }

  it('should write back the slots of a capped host together, not one finished call at a time', async () => {
    const callbacks = Array.from({ length: CALLS }, (_, i) => ({ url: `${receiver.url}/${i}` }));
    const before = await writeBackTotals();
    const res = await service.api('/v1/batches', { method: 'POST', json: { callbacks } });
    expect(res.status).toBe(202);
    const batchId = (await jsonOf(res)).id;
    await waitFor(async () => (await service.apiJson(`/v1/batches/${batchId}`)).status === 'completed', 30_000, 20);

    expect(receiver.requests.filter((r) => r.url !== '/warm')).toHaveLength(CALLS);
    expect(receiver.maxActive).toBeLessThanOrEqual(CAP);
    const after = await writeBackTotals();
    expect(after.rows - before.rows).toBe(CALLS);
    // Up to a whole cap (20) per write-back; 18-20 measured in this test (the test
    // runner shares the service's thread), against 9 when written at the first finished call.
    const perStatement = (after.rows - before.rows) / (after.statements - before.statements);
    expect(perStatement).toBeGreaterThanOrEqual(11);
  });
});
