import { appendFileSync } from 'node:fs';
import type { TestProject } from 'vitest/node';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres.js';
import { migrate } from '../../src/database/migrator.js';
import { startPgBouncer } from './pgbouncer.js';
import { TEST_SERVER_SETTINGS } from './server-settings.js';

/** Port of the embedded test server; give each concurrent test run its own. */
const TEST_PG_PORT = Number(process.env.TEST_PG_PORT ?? 54339);

interface Shared {
  provided: { pgAdminUrl: string; pgPoolerUrl: string | null; pgTemplate: string };
  teardown: () => Promise<void>;
}
/**
 * The projects of one run that need a database (db, api, slow) each run this setup, in
 * one process: the first starts the server and builds the template, the others share
 * them, and the last to finish tears them down.
 */
const SHARED = Symbol.for('callbacks.test.database');
type Holder = { shared?: Promise<Shared>; users: number };
const holder: Holder = ((globalThis as Record<symbol, Holder>)[SHARED] ??= { users: 0 });

/**
 * Starts one real Postgres for the whole run (embedded under .data/test, or the
 * server of DATABASE_URL) and builds a migrated template database. Each test file
 * then clones the template (test/support/database.ts), so files never share rows.
 * With TEST_PGBOUNCER=1, a PgBouncer in transaction mode goes in front of that server
 * (test/support/pgbouncer.ts): services then get the database through it and a direct
 * URL beside it, as they would behind a pooler in production.
 */
export default async function setup(project: TestProject) {
  holder.users++;
  const shared = await (holder.shared ??= start());
  project.provide('pgAdminUrl', shared.provided.pgAdminUrl);
  project.provide('pgPoolerUrl', shared.provided.pgPoolerUrl);
  project.provide('pgTemplate', shared.provided.pgTemplate);
  return async () => {
    if (--holder.users > 0) return;
    holder.shared = undefined;
    await shared.teardown();
  };
}

async function start(): Promise<Shared> {
  let serverUrl: (db: string) => string;
  let stop = async () => undefined as void;
  if (process.env.DATABASE_URL) {
    const base = new URL(process.env.DATABASE_URL);
    serverUrl = (db) => Object.assign(new URL(base), { pathname: `/${db}` }).toString();
  } else {
    // TEST_PG_LOG=<file>: the server's log (deadlocks with their cycle, statement errors) goes there, when this run starts the server
    const log = process.env.TEST_PG_LOG;
    const write = log ? (m: string) => appendFileSync(log, m.endsWith('\n') ? m : `${m}\n`) : undefined;
    const embedded = await startEmbeddedPostgres(`.data/test-${TEST_PG_PORT}`, TEST_PG_PORT, write, write, TEST_SERVER_SETTINGS);
    serverUrl = embedded.serverUrl;
    stop = embedded.stop;
  }
  // One template per run, so runs sharing a server do not drop each other's.
  const template = `callbacks_template_${process.pid}`;
  const admin = new pg.Client({ connectionString: serverUrl('postgres') });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${template}`);
  await admin.end();
  await migrate(serverUrl(template));
  // No teardown runs when setup throws: the server this started stops here then.
  const stopAndThrow = async (error: unknown): Promise<never> => {
    await stop();
    throw error;
  };
  const pooler = process.env.TEST_PGBOUNCER === '1' ? await startPgBouncer(serverUrl('postgres')).catch(stopAndThrow) : undefined;
  const provided = { pgAdminUrl: serverUrl('postgres'), pgPoolerUrl: pooler?.url('postgres') ?? null, pgTemplate: template };
  const teardown = async () => {
    await pooler?.stop();
    const c = new pg.Client({ connectionString: serverUrl('postgres') });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
    await c.end();
    await stop();
  };
  return { provided, teardown };
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** The server's `postgres` database, direct. */
    pgAdminUrl: string;
    /** The same through PgBouncer (TEST_PGBOUNCER=1), else null. */
    pgPoolerUrl: string | null;
    pgTemplate: string;
  }
}
