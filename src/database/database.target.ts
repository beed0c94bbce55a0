import pg from 'pg';
import type { AppConfig } from '../config/app.config.js';

/**
 * Where the service's connections go. `url` carries every statement; `directUrl`
 * carries what needs a session of its own: LISTEN, the maintenance leader's advisory
 * lock and the migrations. They differ when `url` is a transaction pooler (PgBouncer
 * in `pool_mode = transaction`, or a managed platform's pooler), where one client
 * connection's statements may run on a different server connection each transaction:
 * no LISTEN, no session lock, no startup `-c` options and (PgBouncer before 1.21) no
 * named prepared statements. Then `pooled` is true and every statement runs unnamed.
 */
export interface DatabaseTarget {
  url: string;
  directUrl: string;
  pooled: boolean;
}

export const DATABASE_TARGET = Symbol('DATABASE_TARGET');

/** A direct connection: both URLs the same, statements prepared by name. */
export const directTarget = (url: string): DatabaseTarget => ({ url, directUrl: url, pooled: false });

export class PoolerWithoutDirectUrlError extends Error {}

/**
 * The target for `url` (DATABASE_URL, or the embedded server's) and the config's
 * DATABASE_DIRECT_URL. A DATABASE_URL given with no direct URL must keep sessions: a
 * transaction pooler found there stops the start with a message naming the variable;
 * so does one found at a DATABASE_DIRECT_URL given.
 * The embedded server (no DATABASE_URL) is direct: nothing to check.
 */
export async function resolveDatabaseTarget(config: Pick<AppConfig, 'databaseUrl' | 'databaseDirectUrl' | 'role'>, url: string): Promise<DatabaseTarget> {
  const needs = `The ${config.role === 'api' ? 'migrations need' : 'worker needs LISTEN, the maintenance lock and the migrations need'} a session of their own`;
  const direct = config.databaseDirectUrl;
  if (direct && direct !== url) {
    // The same pooler written another way (localhost for 127.0.0.1, another user) would
    // carry the leader's advisory lock on a pooled session: two leaders, or none.
    if (await isTransactionPooler(direct)) {
      throw new PoolerWithoutDirectUrlError(
        `DATABASE_DIRECT_URL goes through a transaction pooler (one connection's statements ran on different server sessions). ${needs}: ` +
          'set it to a direct (or session-mode) connection to the same database.',
      );
    }
    return { url, directUrl: direct, pooled: true };
  }
  if (config.databaseUrl && (await isTransactionPooler(url))) {
    throw new PoolerWithoutDirectUrlError(
      `${direct ? 'DATABASE_URL, and DATABASE_DIRECT_URL the same,' : 'DATABASE_URL'} goes through a transaction pooler (one connection's statements ran on different server sessions). ` +
        `${needs}: set DATABASE_DIRECT_URL to a direct (or session-mode) connection to the same database.`,
    );
  }
  return directTarget(url);
}

/**
 * Whether `url` is a transaction pooler: a session keeps its server backend from one
 * transaction to the next, through a direct connection or a session-mode pooler,
 * always. So two clients take turns: A reads its backend's pid, B opens a transaction
 * and reads its own, A reads again. Through a transaction pooler either B got the
 * backend A had just released (PgBouncer hands out the most recently used one), or A
 * came back on another one because B holds A's; directly, neither can happen. Costs
 * two short connections at start.
 */
export async function isTransactionPooler(url: string): Promise<boolean> {
  const a = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  const b = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  const pid = async (c: pg.Client) => (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  try {
    await a.connect();
    await b.connect();
    const first = await pid(a);
    await b.query('BEGIN');
    const other = await pid(b);
    const again = other === first ? first : await pid(a);
    await b.query('COMMIT');
    return other === first || again !== first;
  } finally {
    await Promise.allSettled([a.end(), b.end()]);
  }
}
