import type { TestProject } from 'vitest/node';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres.js';
import { migrate } from '../../src/database/migrator.js';

export const TEMPLATE_DB = 'callbacks_test_template';
const TEST_PG_PORT = 54339;

/**
 * Starts one real Postgres for the whole run (embedded under .data/test, or the
 * server of DATABASE_URL) and builds a migrated template database. Each test file
 * then clones the template (test/support/database.ts), so files never share rows.
 */
export default async function setup(project: TestProject) {
  let serverUrl: (db: string) => string;
  let stop = async () => undefined as void;
  if (process.env.DATABASE_URL) {
    const base = new URL(process.env.DATABASE_URL);
    serverUrl = (db) => Object.assign(new URL(base), { pathname: `/${db}` }).toString();
  } else {
    const embedded = await startEmbeddedPostgres('.data/test', TEST_PG_PORT);
    serverUrl = embedded.serverUrl;
    stop = embedded.stop;
  }
  const admin = new pg.Client({ connectionString: serverUrl('postgres') });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DB} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${TEMPLATE_DB}`);
  await admin.end();
  await migrate(serverUrl(TEMPLATE_DB));
  project.provide('pgAdminUrl', serverUrl('postgres'));
  return async () => {
    await stop();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
  }
}
