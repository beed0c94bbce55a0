import pg from 'pg';
import type { DatabaseTarget } from './database.target.js';

/** The oldest PostgreSQL major the service supports: the one the version matrix in CI starts at (15 to 18, JIT on and off). */
export const MIN_SERVER_VERSION_NUM = 150000;

export interface ServerFacts {
  version: string;
  versionNum: number;
  /** `jit` as the server sets it for new sessions, and whether the server was built with it. */
  jit: string;
  jitAvailable: boolean;
  synchronousCommit: string;
}

export class UnsupportedServerError extends Error {}

/** Reads what the start-up log reports of the server, on the direct connection. */
export async function readServerFacts(url: string): Promise<ServerFacts> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    const { rows } = await client.query<{ version: string; num: number; jit: string; jit_available: boolean; sync: string }>(
      `SELECT current_setting('server_version') AS version, current_setting('server_version_num')::int AS num,
              current_setting('jit') AS jit, pg_jit_available() AS jit_available, current_setting('synchronous_commit') AS sync`,
    );
    const r = rows[0];
    return { version: r.version, versionNum: r.num, jit: r.jit, jitAvailable: r.jit_available, synchronousCommit: r.sync };
  } finally {
    await client.end().catch(() => undefined); // the facts are read (or the error thrown): closing cannot change them
  }
}

/** Throws, naming the minimum, on a server older than 15. */
export function checkServer(facts: ServerFacts): void {
  if (facts.versionNum < MIN_SERVER_VERSION_NUM) {
    throw new UnsupportedServerError(`PostgreSQL ${facts.version} is not supported: the service needs PostgreSQL 15 or newer (15, 16, 17 and 18 are tested).`);
  }
}

/** One line for the start-up log: the server and the settings that change how the service runs on it. */
export function describeServer(facts: ServerFacts, target: DatabaseTarget): string {
  const jit = facts.jitAvailable ? `jit ${facts.jit}` : 'jit not built in';
  const via = target.pooled ? 'DATABASE_URL through a transaction pooler (statements unnamed), sessions on DATABASE_DIRECT_URL' : 'direct connection';
  return `PostgreSQL ${facts.version}: ${jit}, synchronous_commit ${facts.synchronousCommit} (the worker's own statements set theirs), ${via}`;
}
