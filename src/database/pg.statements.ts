import pg from 'pg';
import type { Prisma } from '../generated/prisma/client.js';
import { statementNamer } from './statement.names.js';

/** How long a statement waits for a free connection before it fails (as "database unavailable"). */
const CONNECT_TIMEOUT_MS = 5000;

/**
 * A connection pool of the service. A connection cut while idle (database restart)
 * is dropped from the pool; the next statement opens a new one, or fails and is
 * answered 503 (API) or retried (dispatcher). `options` are session settings.
 */
export function openPool(databaseUrl: string, max: number, options?: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl, max, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, options });
  pool.on('error', () => undefined);
  return pool;
}

/** Runs statements: a pool (each statement on any free connection) or one transaction's connection. */
export interface SqlRunner {
  /** Runs one statement and returns its rows. */
  query<T>(statement: Prisma.Sql): Promise<T[]>;
  /** Runs one statement and returns how many rows it changed. */
  execute(statement: Prisma.Sql): Promise<number>;
}

/**
 * Every raw statement of the service runs here: written as `Prisma.sql` templates
 * (every value a bound parameter), run straight on a `pg` pool (the driver under
 * Prisma's adapter) and prepared by name (statement.names.ts). Prisma Client keeps
 * the plain model reads and writes. Prisma's raw-query path serialises every
 * parameter to JSON and parses it back, then converts every result value, before
 * and after the same driver call: for the API's status read of 25 callbacks that
 * was ~0.4 ms of CPU per statement on top of pg's ~0.5 ms. Results come as pg
 * parses them: `timestamptz` as Date, `json` parsed, `int8` and `numeric` as
 * strings (cast counts to `int`).
 */
export class PgStatements implements SqlRunner {
  private readonly nameOf: (query: { sql: string }) => string;

  /** `prefix` names this runner's prepared statements; it must differ from any other namer's on the same pool. */
  constructor(
    protected readonly pool: pg.Pool,
    prefix: string,
  ) {
    this.nameOf = statementNamer(prefix);
  }

  async query<T>(statement: Prisma.Sql): Promise<T[]> {
    return (await run(this.pool, this.nameOf, statement)).rows as T[];
  }

  async execute(statement: Prisma.Sql): Promise<number> {
    return (await run(this.pool, this.nameOf, statement)).rowCount ?? 0;
  }

  /**
   * Runs `work` in one transaction on one connection: committed when it resolves,
   * rolled back when it throws. Keep it short: it holds a pooled connection and
   * whatever row locks its statements take until it ends.
   */
  async transaction<T>(work: (tx: SqlRunner) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const nameOf = this.nameOf;
    const tx: SqlRunner = {
      query: async <R>(statement: Prisma.Sql) => (await run(client, nameOf, statement)).rows as R[],
      execute: async (statement: Prisma.Sql) => (await run(client, nameOf, statement)).rowCount ?? 0,
    };
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await work(tx);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((e: Error) => (broken = e));
      throw error;
    } finally {
      client.release(broken);
    }
  }
}

function run(on: pg.Pool | pg.PoolClient, nameOf: (query: { sql: string }) => string, statement: Prisma.Sql): Promise<pg.QueryResult> {
  const name = nameOf({ sql: statement.text }) || undefined;
  return on.query({ name, text: statement.text, values: statement.values });
}
