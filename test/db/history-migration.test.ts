import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { migrate, readMigrations } from '../../src/database/migrator.js';
import { RetentionService } from '../../src/retention/retention.service.js';
import { connect } from '../support/database.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';

const PARTITIONING = '20261203185000_history_partitions_prepare';
const H = 3_600_000;

/**
 * The migration that partitions the history, from the schema before it with data in
 * it: nothing is copied or lost, pending rows are sent, finished ones stay readable
 * and are purged row by row as before, and new rows go to the partitions.
 */
describe('history partitioning migration', () => {
  const name = `t_migrate_${process.pid}`;
  let url: string;
  let db: pg.Client;
  let service: TestService | undefined;
  let shop: Receiver;

  beforeAll(async () => {
    const admin = new pg.Client({ connectionString: inject('pgAdminUrl') });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    url = Object.assign(new URL(inject('pgAdminUrl')), { pathname: `/${name}` }).toString();
    const all = readMigrations();
    const upTo = all.findIndex((m) => m.name === PARTITIONING);
    expect(upTo).toBeGreaterThan(0);
    await migrate(url, all.slice(0, upTo));
    db = await connect(url);
    shop = await Receiver.start({ host: '127.0.0.8' });
  });
  afterAll(async () => {
    await service?.dispose();
    await db?.end();
    await shop?.close();
    const admin = new pg.Client({ connectionString: inject('pgAdminUrl') });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });

  it('should partition a filled history without losing a row, send what was pending and purge what was finished as before', async () => {
    // an admin key: the migrations to come keep its private networks (the shop is on loopback)
    const key = (
      await db.query(`INSERT INTO api_key (id, name, prefix, hash, is_admin) VALUES (gen_random_uuid(), 'm', 'pm', md5(random()::text), true) RETURNING id`)
    ).rows[0].id;
    const batch = (await db.query(`INSERT INTO batch (id, api_key_id, total) VALUES (gen_random_uuid(), $1, 2000) RETURNING id`, [key])).rows[0].id;
    // 1,000 finished two days ago with an attempt each, 1,000 pending (due now) to the receiver
    await db.query(
      `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, timeout_ms, max_attempts, status, attempts, next_attempt_at, completed_at, created_at)
       SELECT gen_random_uuid(), $1, $2, $3 || '/old' || g, $3, 'POST', 5000, 3,
              CASE WHEN g <= 1000 THEN 'succeeded' ELSE 'pending' END, CASE WHEN g <= 1000 THEN 1 ELSE 0 END, now(),
              CASE WHEN g <= 1000 THEN now() - interval '2 days' END, now() - interval '2 days'
       FROM generate_series(1, 2000) g`,
      [batch, key, shop.url],
    );
    await db.query(
      `INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, status_code, outcome)
       SELECT id, api_key_id, host, 1, completed_at, 12, 200, 'success' FROM callback WHERE status = 'succeeded'`,
    );
    const finished = (await db.query(`SELECT id FROM callback WHERE status = 'succeeded' LIMIT 1`)).rows[0].id;

    const started = performance.now();
    expect(await migrate(url)).toContain(PARTITIONING);
    console.log(`partitioning migration over 2,000 callbacks and 1,000 attempts: ${(performance.now() - started).toFixed(0)} ms`);
    const count = async (sql: string) => (await db.query(sql)).rows[0].n;
    expect(await count(`SELECT count(*)::int AS n FROM callback`)).toBe(2000);
    expect(await count(`SELECT count(*)::int AS n FROM callback_live`)).toBe(2000); // attached as it was, no copy
    expect(await count(`SELECT count(*)::int AS n FROM attempt`)).toBe(1000);
    expect(await count(`SELECT count(*)::int AS n FROM attempt_before`)).toBe(1000);
    // The queue's foreign keys were adopted by the parent's (no second set, none checked
    // again); afterwards the one on batch_id went (migration callback_batch_no_fkey) and the
    // one on receiver_id became callback_live's own (migration callback_receiver_fkey_live).
    const fks = await db.query(
      `SELECT conname, conparentid <> 0 AS adopted, convalidated FROM pg_constraint WHERE conrelid = 'callback_live'::regclass AND contype = 'f' ORDER BY 1`,
    );
    expect(fks.rows).toEqual([{ conname: 'callback_live_receiver_id_fkey', adopted: false, convalidated: true }]);

    // A day's window: the old finished rows are past it.
    service = await startTestService({ retentionHours: 24 }, url);
    await waitFor(() => shop.requests.length >= 1000, 30_000);
    await waitFor(async () => (await count(`SELECT count(*)::int AS n FROM callback WHERE status = 'succeeded'`)) === 2000, 30_000);
    expect(new Set(shop.requests.map((r) => r.url)).size).toBe(1000);
    // sent now, they finished into the time partitions; the old ones stay in the queue's, finished
    expect(await count(`SELECT count(*)::int AS n FROM callback WHERE status = 'succeeded' AND done_at <> 'infinity'`)).toBe(1000);
    expect(await count(`SELECT count(*)::int AS n FROM callback_live`)).toBe(1000);
    const attempt = (await db.query(`SELECT started_at FROM attempt WHERE callback_id = $1`, [finished])).rows;
    expect(attempt).toHaveLength(1);

    const purged = await service.app.get(RetentionService).purge();
    expect(purged.callbacks).toBe(1000); // the rows finished before, row by row, with their attempts
    expect(await count(`SELECT count(*)::int AS n FROM callback`)).toBe(1000);
    expect(await count(`SELECT count(*)::int AS n FROM attempt WHERE callback_id = '${finished}'`)).toBe(0);
    // what remains goes with its partitions once past the window
    expect((await service.app.get(RetentionService).purge(new Date(Date.now() + 48 * H))).partitions).toBeGreaterThan(0);
    expect(await count(`SELECT count(*)::int AS n FROM callback`)).toBe(0);
    expect(await count(`SELECT count(*)::int AS n FROM attempt`)).toBe(0);
  });

  it('should take a database partitioned by the earlier, one-transaction text as it is: the preparation recorded as not needed, nothing run', async () => {
    const main = readMigrations().find((m) => m.name === '20261203190000_history_partitions')!;
    expect(main.earlier).toHaveLength(1);
    // As a database migrated before the preparation existed: the partitioning recorded with its earlier checksum, no preparation.
    await db.query(`UPDATE _prisma_migrations SET checksum = $1 WHERE migration_name = $2`, [main.earlier[0], main.name]);
    await db.query(`DELETE FROM _prisma_migrations WHERE migration_name = $1`, [PARTITIONING]);
    const before = (await db.query(`SELECT count(*)::int AS n FROM pg_indexes WHERE indexname LIKE '%pkey_new'`)).rows[0].n;
    expect(await migrate(url)).toEqual([]);
    const { rows } = await db.query(`SELECT logs, finished_at IS NOT NULL AS done FROM _prisma_migrations WHERE migration_name = $1`, [PARTITIONING]);
    expect(rows).toEqual([{ logs: 'not needed here', done: true }]);
    expect((await db.query(`SELECT count(*)::int AS n FROM pg_indexes WHERE indexname LIKE '%pkey_new'`)).rows[0].n).toBe(before);
    // A text that is neither the current one nor an earlier one is still refused.
    await db.query(`UPDATE _prisma_migrations SET checksum = repeat('0', 64) WHERE migration_name = $1`, [main.name]);
    await expect(migrate(url)).rejects.toThrow(/was edited after it was applied/);
  });
});
