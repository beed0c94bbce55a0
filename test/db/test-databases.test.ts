import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { connectPoolerConsole, directUrlOf, useTestDatabase } from '../support/database.js';

// The harness itself: a TEST_PGBOUNCER=1 run means something only if services really
// reach their database through PgBouncer in transaction mode, and the tests' own
// clients do not.
describe('test databases', () => {
  const database = useTestDatabase();

  it('should give services the pooled URL and map it to the direct one for test clients', async () => {
    const pooler = inject('pgPoolerUrl');
    if (!pooler) {
      expect(database.url).toBe(database.directUrl);
      return;
    }
    expect(new URL(database.url).host).toBe(new URL(pooler).host);
    expect(new URL(database.directUrl).host).toBe(new URL(inject('pgAdminUrl')).host);
    expect(directUrlOf(database.url)).toBe(database.directUrl);
    const { rows } = await database.db.query<{ name: string }>('SELECT current_database() AS name');
    expect(database.directUrl).toContain(`/${rows[0].name}`);
  });

  it('should pool by transaction behind PgBouncer (two open clients on one server session), by client without it', async () => {
    const pooler = inject('pgPoolerUrl');
    const [a, b] = [new pg.Client({ connectionString: database.url }), new pg.Client({ connectionString: database.url })];
    await Promise.all([a.connect(), b.connect()]);
    try {
      const pid = async (c: pg.Client) => (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      const first = await pid(a);
      expect(await pid(database.db)).not.toBe(first);
      if (!pooler) {
        expect(await pid(b)).not.toBe(first);
        return;
      }
      // In session mode, b would hold a server connection of its own while a is open.
      expect(await pid(b)).toBe(first);
      const admin = (await connectPoolerConsole())!;
      const pools = (await admin.query<{ database: string; pool_mode: string }>('SHOW POOLS')).rows;
      await admin.end();
      expect(pools.find((p) => database.url.endsWith(`/${p.database}`))?.pool_mode).toBe('transaction');
    } finally {
      await Promise.all([a.end(), b.end()]);
    }
  });
});
