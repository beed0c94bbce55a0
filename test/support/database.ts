import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';

/** A fresh database cloned from the migrated template; dropped by `drop()`. */
export async function createTestDatabase(): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  const adminUrl = inject('pgAdminUrl');
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name} TEMPLATE ${inject('pgTemplate')}`);
  await admin.end();
  const url = Object.assign(new URL(adminUrl), { pathname: `/${name}` }).toString();
  return {
    url,
    name,
    drop: async () => {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** A plain pg client on a test database, for seeding rows and asserting on them. */
export async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

/**
 * A fresh test database and a client on it for the calling `describe` block:
 * created before its tests, dropped after them. Read `db` inside tests and hooks.
 */
export function useTestDatabase(): { readonly db: pg.Client; readonly url: string } {
  let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  let client: pg.Client | undefined;
  beforeAll(async () => {
    database = await createTestDatabase();
    client = await connect(database.url);
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
  };
}
