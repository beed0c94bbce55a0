import { afterAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/database.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { checkedFetch } from '../support/openapi-validator.js';
import { type ServiceProcess, workerBehindProxy as startWorkerBehindProxy } from '../support/process.js';
import { waitFor } from '../support/service.js';

/** Log lines of a spawned service with `event`, with their times. */
function events(p: ServiceProcess, event: string): Date[] {
  return p
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { event?: string; time: string })
    .filter((l) => l.event === event)
    .map((l) => new Date(l.time));
}

const ready = async (p: ServiceProcess) => (await checkedFetch(p.url, `${p.url}/health/ready`)).status;

/**
 * Faults between the workers and Postgres, through a TCP proxy of the test's own
 * in front of each worker (test/support/fault-proxy.ts): a blackhole of the leader.
 * Resets under load are the slow tier's (test/slow/db-resets.test.ts).
 */
describe('workers cut off from Postgres', () => {
  const t = useTestDatabase();
  const processes: ServiceProcess[] = [];
  const proxies: FaultProxy[] = [];
  const POLL_MS = 200;
  /** LEADER_LOCK_TIMEOUT_MS of these workers: the lock's session ends 3 s after its last statement. */
  const LOCK_TIMEOUT_MS = 3000;

  afterAll(async () => {
    for (const p of processes) p.kill('SIGKILL');
    for (const p of proxies) await p.close();
  });

  const workerBehindProxy = (host: string) =>
    startWorkerBehindProxy(t.directUrl, host, { pollMs: POLL_MS, lockTimeoutMs: LOCK_TIMEOUT_MS }, { proxies, processes });

  it(
    'should hand maintenance to another worker within the documented bound when the leader is blackholed three times the lock timeout, the old leader stopping first; readiness 503 meanwhile',
    { timeout: 180_000 },
    async () => {
      const a = await workerBehindProxy('127.0.0.71');
      await waitFor(() => events(a.worker, 'leader_started').length === 1 || undefined, 15_000);
      const b = await workerBehindProxy('127.0.0.72');
      expect(events(b.worker, 'leader_started')).toHaveLength(0);

      const cutAt = new Date();
      a.proxy.set({ kind: 'blackhole' });
      const [bLeads] = await waitFor(() => {
        const e = events(b.worker, 'leader_started');
        return e.length > 0 ? e : undefined;
      }, 40_000);
      const [aStopped] = events(a.worker, 'leader_stopped');
      expect(aStopped, a.worker.output()).toBeDefined();
      // the old leader stopped before the new one started, and the new one within LEADER_LOCK_TIMEOUT_MS + a reaper interval (+ 1 s of this machine)
      expect(aStopped.getTime()).toBeLessThan(bLeads.getTime());
      expect(bLeads.getTime() - cutAt.getTime()).toBeLessThan(LOCK_TIMEOUT_MS + POLL_MS + 1000);
      expect(await ready(a.worker)).toBe(503);
      expect(await ready(b.worker)).toBe(200);

      // cut off three times as long as the lock's timeout: B keeps leading through it
      await new Promise((r) => setTimeout(r, Math.max(0, 3 * LOCK_TIMEOUT_MS - (Date.now() - cutAt.getTime()))));
      a.proxy.set({ kind: 'pass' });
      await waitFor(async () => (await ready(a.worker)) === 200 || undefined, 60_000, 250);
      // B keeps the lead; A does not take it back
      expect(events(a.worker, 'leader_started')).toHaveLength(1);
      expect(events(b.worker, 'leader_stopped')).toHaveLength(0);
      await a.worker.stop();
      await b.worker.stop();
    },
  );
});
