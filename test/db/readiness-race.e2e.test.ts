import { randomBytes } from 'node:crypto';
import net from 'node:net';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { HealthController } from '../../src/health/health.controller.js';
import { connect, createTestDatabase } from '../support/database.js';
import { spawnService, type ServiceProcess } from '../support/process.js';
import { closedPort } from '../support/receiver.js';
import { startTestService, TEST_KEY, waitFor, waitForLockWaiter } from '../support/service.js';

/** Gap between probes: the window it guards was a few ms wide (one INSERT). */
const PROBE_EVERY_MS = 2;
const START_LIMIT_MS = 30_000;

/** Whether a TCP connection to `port` is taken: a refused fetch costs ~4 times its CPU (~0.9 ms), and the probes are hundreds a second. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Probes `base`'s readiness from before its process exists until it answers 200, then
 * sends the very next request with the test key, as an orchestrator's script would.
 * Every status seen (connection refused is not one) and that next answer. Until the
 * port first takes a connection it is knocked on with TCP alone (a refused fetch is
 * the same refusal), from then on every probe is the HTTP one.
 */
function probeUntilReady(base: string): { seen: number[]; tries: () => number; result: Promise<Response | undefined>; stop: () => void } {
  const seen: number[] = [];
  let stopped = false;
  let tries = 0;
  let listening = false;
  const port = Number(new URL(base).port);
  const result = (async () => {
    const until = Date.now() + START_LIMIT_MS;
    while (!stopped && Date.now() < until) {
      tries++;
      listening ||= await accepts(port);
      const status = !listening
        ? 0
        : await fetch(`${base}/health/ready`).then(
            (r) => r.status,
            () => 0,
          );
      if (status !== 0) seen.push(status);
      if (status === 200) return fetch(`${base}/v1/callbacks`, { headers: { authorization: `Bearer ${TEST_KEY}` } });
      await new Promise((r) => setTimeout(r, PROBE_EVERY_MS));
    }
    return undefined;
  })();
  return { seen, tries: () => tries, result, stop: () => void (stopped = true) };
}

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
    const db = await emptyDatabase();
    cleanups.push(db.drop);
    const port = await closedPort();
    const probe = probeUntilReady(`http://127.0.0.1:${port}`);
    // The API role: no worker check to wait for, so /health/ready answers as early as
    // it can, and the race is at its tightest (it lost every time here before the fix).
    const svc: ServiceProcess = await spawnService({ PORT: String(port), DATABASE_URL: db.url, ROLE: 'api' });
    cleanups.push(svc.stop);
    const first = await probe.result;
    probe.stop();
    expect(first, `never ready; saw ${probe.seen.join(',')}`).toBeDefined();
    expect(first!.status, 'first request after ready').toBe(200);
    // Whatever answered before 200 said "not ready", never something else.
    expect(probe.seen.slice(0, -1).every((s) => s === 503)).toBe(true);
    await svc.stop();
  });

  // The same without a race: the first key's insert is held, so a port that answered before it would be seen answering.
  it('should not listen while the first key is still being made', async () => {
    const db = await createTestDatabase();
    cleanups.push(db.drop);
    const locker = await connect(db.url);
    cleanups.push(() => locker.end());
    // SHARE: reads of api_key go on, its insert waits
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE api_key IN SHARE MODE');
    const port = await closedPort();
    const probe = probeUntilReady(`http://127.0.0.1:${port}`);
    // In this process (not a spawned one): what is checked is the order of startService's steps, not a process's start.
    const starting = startTestService({ role: 'api', port }, db.url);
    // the service's insert of the key waits on the lock, and meanwhile its port takes no connection
    const watcher = await connect(db.url);
    cleanups.push(() => watcher.end());
    await waitForLockWaiter(watcher, 'INSERT INTO "public"."api_key"', 30_000);
    // a few dozen probes while it waits (or an answer, which ends the probing)
    const triesThen = probe.tries();
    await waitFor(() => probe.tries() >= triesThen + 30 || probe.seen.length > 0 || undefined, 10_000, 5);
    const probesBefore = probe.seen.length;
    await locker.query('COMMIT');
    const svc = await starting;
    cleanups.push(svc.stop);
    const first = await probe.result;
    probe.stop();
    expect(probesBefore, 'statuses answered while the first key waited').toBe(0);
    expect(first!.status, 'first request after ready').toBe(200);
    await svc.stop();
  });
});
