import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { HealthController } from '../../src/health/health.controller.js';
import { spawnService, type ServiceProcess } from '../support/process.js';
import { closedPort } from '../support/receiver.js';
import { TEST_KEY } from '../support/service.js';

/** Fresh starts raced; the bug this guards (listen before the first key) lost 2 of 3 and 2 of 5. */
const STARTS = 3;
/** Gap between probes: the window it guards was a few ms wide (one INSERT). */
const PROBE_EVERY_MS = 2;
const START_LIMIT_MS = 30_000;

async function emptyDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const adminUrl = inject('pgAdminUrl');
  const name = `t_race_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  // Not the migrated template: the service has to apply every migration on this start.
  await admin.query(`CREATE DATABASE ${name} TEMPLATE template0`);
  await admin.end();
  const url = Object.assign(new URL(adminUrl), { pathname: `/${name}` }).toString();
  const drop = async () => {
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  };
  return { url, drop };
}

describe(`${HealthController.name} readiness at start-up`, () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  it('should not answer ready before migrations are applied and BOOTSTRAP_API_KEY works (regression: 401 after ready)', async () => {
    for (let start = 0; start < STARTS; start++) {
      const db = await emptyDatabase();
      cleanups.push(db.drop);
      const port = await closedPort();
      const base = `http://127.0.0.1:${port}`;
      // Probing begins before the process exists, so the first moment the port answers is seen.
      const seen: number[] = [];
      let ready = false;
      let stopProbing = false;
      const probe = (async () => {
        const until = Date.now() + START_LIMIT_MS;
        while (!stopProbing && Date.now() < until) {
          const status = await fetch(`${base}/health/ready`).then(
            (r) => r.status,
            () => 0,
          );
          if (status !== 0) seen.push(status);
          if (status === 200) {
            ready = true;
            // The very next request, as an orchestrator's script would send it.
            return fetch(`${base}/v1/callbacks`, { headers: { authorization: `Bearer ${TEST_KEY}` } });
          }
          await new Promise((r) => setTimeout(r, PROBE_EVERY_MS));
        }
        return undefined;
      })();
      // The API role: no worker check to wait for, so /health/ready answers as early as
      // it can, and the race is at its tightest (it lost every time here before the fix).
      const svc: ServiceProcess = await spawnService({ PORT: String(port), DATABASE_URL: db.url, ROLE: 'api' });
      cleanups.push(svc.stop);
      const first = await probe;
      stopProbing = true;
      expect(ready, `start ${start}: never ready; saw ${seen.join(',')}`).toBe(true);
      expect(first!.status, `start ${start}: first request after ready`).toBe(200);
      // Whatever answered before 200 said "not ready", never something else.
      expect(seen.slice(0, -1).every((s) => s === 503)).toBe(true);
      await svc.stop();
    }
  });
});
