import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MaintenanceService } from '../../src/dispatch/maintenance.service.js';
import { WorkerStatus } from '../../src/worker-status/worker-status.service.js';
import { connect, createTestDatabase } from '../support/database.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';

/** Two workers on one database: one leads maintenance at a time, and the other takes over when it stops. */
describe(MaintenanceService.name, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: pg.Client;
  let receiver: Receiver;
  const services: TestService[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    db = await connect(database.url);
    receiver = await Receiver.start();
    for (let i = 0; i < 2; i++) services.push(await startTestService({ role: 'worker', dispatchPollMs: 100 }, database.url));
  });
  afterAll(async () => {
    for (const s of services) await s.stop().catch(() => undefined);
    await db?.end();
    await receiver?.close();
    await database?.drop();
  });

  const leaders = () => services.filter((s) => s.app.get(WorkerStatus).leader);

  /** A callback claimed by a worker that died: in flight, its lease run out a second ago (stored as the API and a claim would). */
  async function orphan(): Promise<string> {
    const key = (
      await db.query(
        `INSERT INTO api_key (id, name, prefix, hash, allow_private_networks) VALUES (gen_random_uuid(), 't', 'cbk_t', gen_random_uuid()::text, true) RETURNING id`,
      )
    ).rows[0].id;
    const batch = (await db.query(`INSERT INTO batch (id, api_key_id, total) VALUES (gen_random_uuid(), $1, 1) RETURNING id`, [key])).rows[0].id;
    const { rows } = await db.query(
      `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, timeout_ms, max_attempts, status, next_attempt_at, lease_owner, lease_expires_at)
       VALUES (gen_random_uuid(), $1, $2, $3, $4, 'POST', 5000, 3, 'in_flight', now(), 'dead-worker', now() - interval '1 second') RETURNING id`,
      [batch, key, `${receiver.url}/ok`, receiver.url],
    );
    return rows[0].id;
  }

  async function expectDeliveredOnce(id: string): Promise<void> {
    await waitFor(async () => (await db.query(`SELECT status FROM callback WHERE id = $1`, [id])).rows[0].status === 'succeeded', 5000);
    expect(receiver.byId(id)).toHaveLength(1);
  }

  it("should let exactly one worker lead, and have it reap a dead worker's lease", async () => {
    await waitFor(() => leaders().length === 1, 5000);
    await new Promise((r) => setTimeout(r, 300)); // the other worker tried several times meanwhile
    expect(leaders()).toHaveLength(1);
    const { rows } = await db.query(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted`);
    expect(rows[0].n).toBe(1);
    await expectDeliveredOnce(await orphan());
  });

  it('should hand the lead to the other worker when the leader stops, which then reaps', async () => {
    const [leader] = leaders();
    const other = services.find((s) => s !== leader)!;
    await leader.stop();
    services.splice(services.indexOf(leader), 1);
    await waitFor(() => other.app.get(WorkerStatus).leader, 3000);
    await expectDeliveredOnce(await orphan());
  });
});
