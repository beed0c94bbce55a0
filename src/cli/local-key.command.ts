import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { digestOf, newKey, prefixOf } from '../auth/api-key.format.js';
import { uuidv7 } from '../common/uuid.js';
import { ConfigError, loadConfig, type AppConfig } from '../config/app.config.js';
import { DataDirBusyError, lockDataDir, type DataDirLock } from '../database/data-dir.lock.js';
import { startEmbeddedPostgres } from '../database/embedded-postgres.js';
import { UsageError, type CliArgs } from './cli.args.js';
import type { Output } from './cli.commands.js';

/**
 * `callbacks keys create <name> [--admin] --local`: a key written straight into the
 * service's database, past the API, so it needs no key: the way back for whoever lost
 * the first one. It reads the service's own settings from the environment: DATABASE_URL
 * (DATABASE_DIRECT_URL when set), or else the embedded Postgres under DATA_DIR, which it
 * starts for the moment, and stops again, when no service runs on it.
 */
export async function createLocalKey(args: CliArgs, env: Record<string, string | undefined>, io: Output): Promise<number> {
  const name = args.positionals[1];
  if (args.positionals[0] !== 'create' || !name) throw new UsageError('--local works with keys create <name> [--admin] only');
  let config: AppConfig;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(error.message);
    throw error;
  }
  try {
    // an admin key made here stands in for the first key, which may reach private networks
    await writeKey(name, args.admin, args.admin || args.privateNetworks, config, io);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    io.err(`error: ${(error as Error).message}\n`);
    return 1;
  }
  return 0;
}

async function writeKey(name: string, admin: boolean, privateNetworks: boolean, config: AppConfig, io: Output): Promise<void> {
  const database = await openDatabase(config);
  try {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ ready: boolean }>("SELECT to_regclass('api_key') IS NOT NULL AS ready");
      if (!rows[0]?.ready) throw new UsageError(`${database.where} has no api_key table yet: start the service on it once first`);
      const key = newKey();
      const id = uuidv7();
      await client.query('INSERT INTO api_key (id, name, prefix, hash, is_admin, allow_private_networks) VALUES ($1, $2, $3, $4, $5, $6)', [
        id,
        name,
        prefixOf(key),
        digestOf(key).toString('hex'),
        admin,
        privateNetworks,
      ]);
      io.out(key);
      io.err(`key ${id} "${name}"${admin ? ' (admin)' : ''} written to ${database.where}: shown once, store it now\n`);
    } finally {
      await client.end();
    }
  } finally {
    await database.close();
  }
}

/** The service's database as its settings say, and how to let it go. */
async function openDatabase(config: AppConfig): Promise<{ url: string; where: string; close: () => Promise<void> }> {
  const url = config.databaseDirectUrl ?? config.databaseUrl;
  if (url) return { url, where: 'the database of DATABASE_URL', close: async () => undefined };
  const dataDir = path.resolve(config.dataDir);
  const pgDir = path.join(dataDir, 'pg');
  if (!existsSync(path.join(pgDir, 'PG_VERSION'))) {
    throw new UsageError(
      `no embedded database under DATA_DIR ${dataDir}: start the service once (npm start), or run this in its folder with its DATA_DIR and EMBEDDED_PG_PORT`,
    );
  }
  let lock: DataDirLock | undefined;
  let port = config.embeddedPgPort;
  try {
    // Held for the moment, so no service starts on the Postgres this may stop again.
    lock = lockDataDir(dataDir, 'callbacks keys create --local');
  } catch (error) {
    if (!(error instanceof DataDirBusyError)) throw error;
    // A service runs on it: its Postgres is up, on the port its pid file says.
    port = runningPort(pgDir) ?? port;
  }
  try {
    const db = await startEmbeddedPostgres(dataDir, port);
    return {
      url: db.url,
      where: `the embedded database under ${dataDir}`,
      close: async () => {
        await db.stop();
        lock?.release();
      },
    };
  } catch (error) {
    lock?.release();
    throw error;
  }
}

/** The port a running Postgres listens on: the fourth line of its postmaster.pid. */
function runningPort(pgDir: string): number | undefined {
  try {
    const port = Number(readFileSync(path.join(pgDir, 'postmaster.pid'), 'utf8').split('\n')[3]);
    return Number.isInteger(port) && port > 0 ? port : undefined;
  } catch {
    return undefined; // no pid file: the server is not running
  }
}
