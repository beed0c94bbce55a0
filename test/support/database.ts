import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';

export interface TestDatabase {
  /** What a service is given as DATABASE_URL: through PgBouncer in a TEST_PGBOUNCER=1 run, else the server's. */
  url: string;
  /** The same database on the server itself (DATABASE_DIRECT_URL); equals `url` without a pooler. */
  directUrl: string;
  name: string;
  drop: () => Promise<void>;
}

/** A fresh database cloned from the migrated template; dropped by `drop()`. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = inject('pgAdminUrl');
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name} TEMPLATE ${inject('pgTemplate')}`);
  await admin.end();
  const directUrl = withDatabase(adminUrl, name);
  const poolerUrl = inject('pgPoolerUrl');
  return {
    url: poolerUrl ? withDatabase(poolerUrl, name) : directUrl,
    directUrl,
    name,
    drop: async () => {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/**
 * The direct URL of a database given by its pooled URL (one on the run's PgBouncer);
 * any other URL as it is. Lets the tests hand `url` around as they always have while
 * their own clients and the service's session connection go to the server.
 */
export function directUrlOf(url: string): string {
  const poolerUrl = inject('pgPoolerUrl');
  if (!poolerUrl) return url;
  const given = new URL(url);
  const pooler = new URL(poolerUrl);
  if (given.host !== pooler.host) return url;
  const server = new URL(inject('pgAdminUrl'));
  return Object.assign(given, { host: server.host }).toString();
}

function withDatabase(url: string, name: string): string {
  return Object.assign(new URL(url), { pathname: `/${name}` }).toString();
}

/** A client on the admin console (database `pgbouncer`) of the run's PgBouncer (TEST_PGBOUNCER=1), connected; null without one. */
export async function connectPoolerConsole(): Promise<pg.Client | null> {
  const poolerUrl = inject('pgPoolerUrl');
  if (!poolerUrl) return null;
  const client = new pg.Client({ connectionString: withDatabase(poolerUrl, 'pgbouncer') });
  await client.connect();
  return client;
}

/**
 * A plain pg client on a test database, for seeding rows and asserting on them. It
 * always goes to the server directly (a pooled `url` is mapped to its direct one):
 * a test's own instruments (LISTEN, locks held across statements, SET) need a session,
 * and what runs behind the pooler is the service under test.
 */
export async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: directUrlOf(url) });
  await client.connect();
  return client;
}

/**
 * A fresh test database and a client on it for the calling `describe` block:
 * created before its tests, dropped after them. Read `db` inside tests and hooks.
 */
export function useTestDatabase(): { readonly db: pg.Client; readonly url: string; readonly directUrl: string } {
  let database: TestDatabase | undefined;
  let client: pg.Client | undefined;
  beforeAll(async () => {
    database = await createTestDatabase();
    client = await connect(database.directUrl);
  });
  afterAll(async () => {
    await client?.end();
    await database?.drop();
  });
  return {
    get db() {
      return client!;
    },
    get url() {
      return database!.url;
    },
    get directUrl() {
      return database!.directUrl;
    },
  };
}

/**
 * Runs `work` in a transaction on `client`, again (up to 5 times) when Postgres ends it
 * for a deadlock: a test's own DDL (a partition attached or detached) can meet the
 * service's statements still under way, which lock the same tables in another order.
 */
export async function inTransactionRetryingDeadlocks(client: pg.Client, work: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await client.query('BEGIN');
      await work();
      await client.query('COMMIT');
      return;
    } catch (error) {
      await client.query('ROLLBACK');
      if (attempt >= 5 || (error as { code?: string }).code !== '40P01') throw error;
    }
  }
}
