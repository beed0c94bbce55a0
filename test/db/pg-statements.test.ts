import { describe, expect, it } from 'vitest';
import { AppConfig } from '../../src/config/app.config.js';
import { CaughtErrors } from '../../src/logging/caught-errors.js';
import { DispatchDatabase, dispatchSettings } from '../../src/database/dispatch-database.js';
import { directTarget } from '../../src/database/database.target.js';
import { inlined, openPool, PgStatements } from '../../src/database/pg.statements.js';
import { Prisma } from '../../src/generated/prisma/client.js';
import { connect, useTestDatabase } from '../support/database.js';
import { waitFor, waitForLockWaiter } from '../support/service.js';

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

/**
 * Behind a transaction pooler (unnamed statements), a statement alone goes with its
 * SET LOCALs in one simple-protocol message: one implicit transaction, ended before
 * the server answers. Run here on a direct connection, which behaves the same.
 */
describe(`${PgStatements.name}, unnamed: a statement with its settings in one round trip`, () => {
  const test = useTestDatabase();

  it('should give the statement its settings, for its own transaction only', async () => {
    const pool = openPool(test.directUrl, 1, () => undefined);
    const db = new PgStatements(pool, null, { jit: 'off', random_page_cost: '1.7' });
    try {
      const [row] = await db.query<{ jit: string; cost: string; pid: number }>(
        Prisma.sql`SELECT current_setting('jit') AS jit, current_setting('random_page_cost') AS cost, pg_backend_pid() AS pid`,
      );
      expect(row.jit).toBe('off');
      expect(row.cost).toBe('1.7');
      // the same connection, after: the session is as it was, outside any transaction
      const { rows } = await pool.query(`SELECT current_setting('random_page_cost') AS cost, pg_backend_pid() AS pid, now() = statement_timestamp() AS fresh`);
      expect(rows[0]).toEqual({ cost: '4', pid: row.pid, fresh: true });
    } finally {
      await pool.end();
    }
  });

  it("should end the statement's transaction before it answers: its row locks never wait on a busy process", async () => {
    await test.db.query(`CREATE TABLE one_trip (id int PRIMARY KEY, note text); INSERT INTO one_trip VALUES (1, 'seed')`);
    const pool = openPool(test.directUrl, 1, () => undefined);
    const db = new PgStatements(pool, null, { lock_timeout: '5000' });
    const other = await connect(test.directUrl);
    try {
      await db.query(Prisma.sql`SELECT 1`); // the pool's one connection open before the clock matters
      // The statement locks row 1 and answers after 200 ms; from about 100 ms to 600 ms this process is busy (no I/O handled).
      const first = db.query<{ started: Date }>(
        Prisma.sql`UPDATE one_trip SET note = ${'first'} WHERE id = ${1} RETURNING statement_timestamp() AS started, pg_sleep(0.2)`,
      );
      await waitFor(
        async () => (await test.db.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep'`)).rowCount,
        5000,
        5,
      );
      // Another session waits for the row; the server stamps when it got it.
      const second = other.query<{ locked: Date }>(`UPDATE one_trip SET note = 'second' WHERE id = 1 RETURNING clock_timestamp() AS locked`);
      await waitForLockWaiter(test.db, `SET note = 'second'`, 5000, 5);
      const until = performance.now() + 500;
      while (performance.now() < until); // busy
      const [{ started }] = await first;
      const { rows } = await second;
      // Committed with the answer, at 200 ms; sent as BEGIN, statement, COMMIT, the COMMIT went out after the busy spell (600 ms).
      expect(rows[0].locked.getTime() - started.getTime()).toBeLessThan(450);
      expect(rows[0].locked.getTime() - started.getTime()).toBeGreaterThanOrEqual(190);
    } finally {
      await other.end();
      await pool.end();
    }
  });

  it('should roll a failed statement back with its transaction, and serve the next one on the same connection', async () => {
    await test.db.query(`CREATE TABLE one_trip_rollback (id int PRIMARY KEY, note text)`);
    const pool = openPool(test.directUrl, 1, () => undefined);
    const db = new PgStatements(pool, null, { lock_timeout: '1000' });
    try {
      expect(await db.execute(Prisma.sql`INSERT INTO one_trip_rollback VALUES (1, ${'a'}), (2, ${'b'})`)).toBe(2);
      await expect(db.execute(Prisma.sql`INSERT INTO one_trip_rollback VALUES (3, ${'c'}), (1, ${'dup'})`)).rejects.toThrow(/duplicate key/);
      expect((await test.db.query(`SELECT count(*)::int AS n FROM one_trip_rollback`)).rows[0].n).toBe(2);
      expect(await db.execute(Prisma.sql`UPDATE one_trip_rollback SET note = ${'z'} WHERE id = ${2}`)).toBe(1);
      expect(pool.totalCount).toBe(1);
    } finally {
      await pool.end();
    }
  });

  it('should read every kind of value as the bound parameter would', async () => {
    const pool = openPool(test.directUrl, 1, () => undefined);
    const db = new PgStatements(pool, null, { jit: 'off' });
    const bound = new PgStatements(pool, 'bound', {});
    const values = {
      text: "it's a \\ back'slash $1 -- not a comment",
      when: new Date('2026-12-03T07:45:12.345Z'),
      ids: ['0190f1a2-0000-7000-8000-000000000001', '0190f1a2-0000-7000-8000-000000000002'],
      json: { a: [1, 'two'], b: null },
      n: 42.5,
      none: null,
      bytes: Buffer.from([0, 1, 254, 255]),
      texts: ['a "quoted", {braced} \\ one', null, 'NULL', '', ' spaced '],
      grid: [
        [1, 2],
        [3, null],
      ],
      times: [new Date('2026-12-03T07:45:12.345Z'), null],
      docs: [{ a: 'x"y\\z' }, null],
      flags: [true, false],
    };
    const statement = Prisma.sql`
      SELECT ${values.text}::text AS text, ${values.when}::timestamptz AS "when", ${values.ids}::uuid[] AS ids,
             ${values.json}::jsonb AS json, ${values.n}::float8 * 2 AS n, ${values.none}::int IS NULL AS none,
             ${values.bytes}::bytea AS bytes, ${'x'} = ANY(${['x', 'y']}) AS found, ${values.texts}::text[] AS texts,
             ${values.grid}::int[][] AS grid, ${values.times}::timestamptz[] AS times, ${values.docs}::jsonb[] AS docs,
             ${values.flags}::boolean[] AS flags, ${true}::boolean AS yes, ${7n}::int8 AS big`;
    try {
      const [viaOneTrip] = await db.query(statement);
      const [viaBound] = await bound.query(statement);
      expect(viaOneTrip).toEqual(viaBound);
      expect(viaOneTrip).toMatchObject({ text: values.text, when: values.when, ids: values.ids, json: values.json, n: 85, none: true, found: true });
      expect(viaOneTrip).toMatchObject({
        texts: values.texts,
        grid: values.grid,
        times: values.times,
        docs: values.docs,
        flags: values.flags,
        yes: true,
        big: '7',
      });
    } finally {
      await pool.end();
    }
  });

  it('should refuse a placeholder with no value', () => {
    expect(() => inlined({ text: 'SELECT $1, $2', values: ['a'] } as unknown as Prisma.Sql)).toThrow(/no value for \$2/);
  });
});

/** The claims' runner: their planner switches on their statements alone. */
describe(`${DispatchDatabase.name}.runnerWith`, () => {
  const test = useTestDatabase();

  it("should run its statements with the worker's settings and its own, leaving the worker's other statements without them", async () => {
    const config = Object.assign(new AppConfig(), { dispatchSynchronousCommit: 'off' });
    for (const pooled of [false, true]) {
      const db = new DispatchDatabase({ ...directTarget(test.directUrl), pooled }, config, new CaughtErrors());
      try {
        const claims = db.runnerWith('claim_test', { enable_sort: 'off', enable_bitmapscan: 'off' }, 1);
        const read = Prisma.sql`SELECT current_setting('enable_sort') AS sort, current_setting('jit') AS jit, current_setting('synchronous_commit') AS commit`;
        expect(await claims.query(read), pooled ? 'pooled' : 'direct').toEqual([{ sort: 'off', jit: 'off', commit: 'off' }]);
        expect(await db.query(read)).toEqual([{ sort: 'on', jit: 'off', commit: 'off' }]);
      } finally {
        await db.onApplicationShutdown();
      }
    }
  });
});
