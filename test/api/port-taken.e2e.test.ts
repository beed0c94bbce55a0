import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/database.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, type TestService } from '../support/service.js';

/**
 * A worker whose port is taken (another role of the service on the same host and
 * PORT) fails to start, after its worker began claiming: what it claimed is handed
 * back at once, not left leased (and its hosts' slots taken) until the leases run out.
 */
describe('a worker that cannot bind its port', () => {
  const t = useTestDatabase();
  let api: TestService;
  let receiver: Receiver;

  beforeAll(async () => {
    api = await startTestService({ role: 'api' }, t.url);
    receiver = await Receiver.start({ host: '127.0.0.68' });
  });
  afterAll(async () => {
    await api?.stop();
    await receiver?.close();
  });

  it('should fail to start, leaving no callback leased: each sent and recorded, or pending as before', { timeout: 60_000 }, async () => {
    const n = 300;
    const batch = await api.apiJson('/v1/batches', {
      method: 'POST',
      json: { callbacks: Array.from({ length: n }, (_, i) => ({ url: `${receiver.url}/taken?i=${i}&sleep=100` })) },
    });
    expect(batch.callbacks).toHaveLength(n);
    const port = new URL(api.url).port;
    // The worker in this process: the same startService a process runs, whose failed start hands back what
    // it claimed before it throws (main.ts then exits 1 on any failed start; data-dir.e2e.test.ts checks that exit).
    await expect(startTestService({ role: 'worker', port: Number(port) }, t.url)).rejects.toThrow(/EADDRINUSE/);
    const { rows } = await t.db.query<{ status: string; leased: number; attempts: number; recorded: number; n: number }>(
      `SELECT c.status, count(*) FILTER (WHERE c.lease_owner IS NOT NULL)::int AS leased, sum(c.attempts)::int AS attempts,
              sum((SELECT count(*) FROM attempt a WHERE a.callback_id = c.id))::int AS recorded, count(*)::int AS n
       FROM callback c WHERE c.batch_id = $1 GROUP BY c.status`,
      [batch.id],
    );
    expect(rows.reduce((sum, r) => sum + r.n, 0)).toBe(n);
    for (const r of rows) {
      expect(['pending', 'succeeded'], JSON.stringify(rows)).toContain(r.status);
      expect(r.leased).toBe(0);
      expect(r.attempts).toBe(r.recorded); // no attempt counted that was not made
    }
  });
});
