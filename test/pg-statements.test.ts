import { describe, expect, it } from 'vitest';
import { AppConfig } from '../src/config/app.config.js';
import { dispatchSettings } from '../src/database/dispatch-database.js';
import { openPool } from '../src/database/pg.statements.js';
import { useTestDatabase } from './support/database.js';

/** openPool's session settings: what a worker's direct connections run with. */
describe(openPool.name, () => {
  const test = useTestDatabase();
  /** Errors of idle connections (the service counts them: CaughtErrors); none expected here. */
  const idleErrors: Error[] = [];
  const onIdleError = (error: Error) => idleErrors.push(error);

  const settingsOf = (pool: ReturnType<typeof openPool>) =>
    pool.query<{ jit: string; cost: string; commit: string; pid: number }>(
      `SELECT current_setting('jit') AS jit, current_setting('random_page_cost') AS cost,
              current_setting('synchronous_commit') AS commit, pg_backend_pid() AS pid`,
    );

  it("should set the worker's settings on every new connection before its first statement", async () => {
    const pool = openPool(test.directUrl, 3, onIdleError, dispatchSettings(Object.assign(new AppConfig(), { dispatchSynchronousCommit: 'off' })));
    try {
      // Six at once on three connections: each connection's first statement, and the ones after it.
      const rows = (await Promise.all(Array.from({ length: 6 }, () => settingsOf(pool)))).map((r) => r.rows[0]);
      expect(new Set(rows.map((r) => r.pid)).size).toBe(3);
      for (const r of rows) expect({ jit: r.jit, cost: r.cost, commit: r.commit }).toEqual({ jit: 'off', cost: '1.1', commit: 'off' });
    } finally {
      await pool.end();
    }
    // The database's own defaults are untouched.
    const { rows } = await test.db.query(`SELECT current_setting('random_page_cost') AS cost`);
    expect(rows[0].cost).toBe('4');
  });

  it('should fail the statement and close the connection when the SET fails, never run it without the settings', async () => {
    const pool = openPool(test.directUrl, 1, onIdleError, { no_such_setting: 'on' });
    try {
      await expect(pool.query('SELECT 1')).rejects.toThrow(/no_such_setting/);
      expect(pool.totalCount).toBe(0);
    } finally {
      await pool.end();
    }
  });

  it('should refuse a setting that is not a plain name and value', () => {
    expect(() => openPool(test.directUrl, 1, onIdleError, { 'jit; DROP TABLE callback': 'off' })).toThrow(/not a setting/);
  });
});
