import { execSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, copyFileSync, lstatSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync, appendFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres.js';
import { waitFor } from './wait.js';

/**
 * A primary and a streaming replica of it, both real Postgres servers from the
 * embedded package, for a test of reads off the primary on a machine with nothing but
 * Node. The replica is made as pg_basebackup makes one, by Postgres's low-level base
 * backup API: `pg_backup_start()`, a copy of the data directory while the server runs,
 * `pg_backup_stop()` and its backup label, then `standby.signal` and
 * `primary_conninfo`; it streams the primary's WAL from there. Both load
 * pg_stat_statements, so a test can count where a statement ran.
 */
export interface ReplicaPair {
  /** The `callbacks` database on the primary. */
  primaryUrl: string;
  /** The same database on the replica. */
  replicaUrl: string;
  /** Stops the replica (fast shutdown: its connections are cut). */
  stopReplica: () => Promise<void>;
  /** Starts it again, streaming from where it stopped; resolves once it takes reads. */
  startReplica: () => Promise<void>;
  /** Stops both and removes their files. */
  stop: () => Promise<void>;
}

const PASSWORD = 'postgres';

export async function startReplicaPair(dir: string): Promise<ReplicaPair> {
  rmSync(dir, { recursive: true, force: true });
  const [primaryPort, replicaPort] = [await freePort(), await freePort()];
  // The same on both: a standby refuses to start with fewer connections (and the like) than its primary.
  const settings = ['shared_preload_libraries=pg_stat_statements', 'wal_keep_size=256MB', 'fsync=off', 'synchronous_commit=off', 'max_connections=300'];
  const primary = await startEmbeddedPostgres(path.join(dir, 'primary'), primaryPort, undefined, undefined, settings);
  const replicaDir = path.join(dir, 'replica', 'pg');
  let replica: ChildProcess | undefined;
  try {
    await baseBackup(primary.serverUrl('postgres'), path.join(dir, 'primary', 'pg'), replicaDir, primaryPort);
  } catch (error) {
    await primary.stop();
    throw error;
  }
  const replicaServerUrl = `postgresql://postgres:${PASSWORD}@127.0.0.1:${replicaPort}/postgres`;
  let log = '';
  const startReplica = async () => {
    const owner = statSync(replicaDir);
    log = '';
    const proc = spawn(
      await postgresBinary(),
      ['-D', replicaDir, '-p', String(replicaPort), '-c', 'listen_addresses=127.0.0.1', ...settings.flatMap((s) => ['-c', s])],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
        // As root the files are the postgres user's (embedded-postgres runs the server as it): so is the server.
        ...(process.getuid?.() === 0 && { uid: owner.uid, gid: owner.gid }),
      },
    );
    proc.stderr!.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4000)));
    replica = proc;
    await waitFor(
      async () => {
        if (proc.exitCode !== null) throw new Error(`it exited (${proc.exitCode})`);
        return (await inRecovery(replicaServerUrl)) === true;
      },
      30_000,
      100,
    ).catch((error: Error) => {
      throw new Error(`the replica did not take reads (${error.message}); its log:\n${log}`);
    });
  };
  const stopReplica = async () => {
    const proc = replica;
    replica = undefined;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill('SIGINT');
    await exited;
  };
  await startReplica().catch(async (error: unknown) => {
    await stopReplica();
    await primary.stop();
    throw error;
  });
  return {
    primaryUrl: primary.url,
    replicaUrl: Object.assign(new URL(replicaServerUrl), { pathname: '/callbacks' }).toString(),
    stopReplica,
    startReplica,
    stop: async () => {
      await stopReplica();
      await primary.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A pair made outside the test (CI: Debian's 15, the replica made by `pg_basebackup -R`;
 * TEST_PG_REPLICA, JSON): `primary` and `replica` are server URLs (any database),
 * `stop` and `start` the shell commands that stop and start the replica. A database
 * of its own is made on the primary (the replica gets it by replication) and dropped
 * by `stop()`; the servers stay up.
 */
export async function givenReplicaPair(spec: { primary: string; replica: string; stop: string; start: string }): Promise<ReplicaPair> {
  const name = `t_replica_${randomBytes(4).toString('hex')}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: spec.primary });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const inDatabase = (url: string) => Object.assign(new URL(url), { pathname: `/${name}` }).toString();
  await waitFor(async () => (await inRecovery(inDatabase(spec.replica))) === true, 30_000, 100);
  let running = true;
  const startReplica = async () => {
    execSync(spec.start, { stdio: 'inherit' });
    running = true;
    await waitFor(async () => (await inRecovery(inDatabase(spec.replica))) === true, 30_000, 100);
  };
  return {
    primaryUrl: inDatabase(spec.primary),
    replicaUrl: inDatabase(spec.replica),
    stopReplica: async () => {
      execSync(spec.stop, { stdio: 'inherit' });
      running = false;
    },
    startReplica,
    stop: async () => {
      if (!running) await startReplica();
      await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/** The low-level base backup of the running primary at `from` into `to`, made a standby of it. */
async function baseBackup(serverUrl: string, from: string, to: string, primaryPort: number): Promise<void> {
  const session = new pg.Client({ connectionString: serverUrl });
  await session.connect();
  try {
    await session.query(`SELECT pg_backup_start('replica', true)`);
    copyTree(from, to);
    // The label names the checkpoint the standby starts replaying from; archiving is off, so nothing to wait for.
    const { rows } = await session.query<{ labelfile: string }>('SELECT labelfile FROM pg_backup_stop(false)');
    writeFileSync(path.join(to, 'backup_label'), rows[0].labelfile);
  } finally {
    await session.end();
  }
  writeFileSync(path.join(to, 'standby.signal'), '');
  appendFileSync(
    path.join(to, 'postgresql.auto.conf'),
    `\nprimary_conninfo = 'host=127.0.0.1 port=${primaryPort} user=postgres password=${PASSWORD} application_name=replica'\nhot_standby = on\n`,
  );
  const owner = statSync(from);
  if (process.getuid?.() === 0) chownTree(to, owner.uid, owner.gid);
  chmodSync(to, 0o700);
}

/**
 * Copies the data directory as the documentation's base backup does: without the
 * server's pid file and options and the WAL (streamed from the primary instead); a
 * file removed while the copy runs (a temporary one) is left out.
 */
function copyTree(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const name of readdirSync(from)) {
    if (name === 'postmaster.pid' || name === 'postmaster.opts') continue;
    const source = path.join(from, name);
    const target = path.join(to, name);
    let stat;
    try {
      stat = lstatSync(source);
    } catch {
      continue;
    }
    if (stat.isDirectory()) {
      if (name === 'pg_wal') mkdirSync(path.join(target, 'archive_status'), { recursive: true });
      else copyTree(source, target);
    } else {
      try {
        copyFileSync(source, target);
      } catch (error) {
        if ((error as { code?: string }).code !== 'ENOENT') throw error;
      }
    }
  }
}

function chownTree(dir: string, uid: number, gid: number): void {
  chownSync(dir, uid, gid);
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (lstatSync(p).isDirectory()) chownTree(p, uid, gid);
    else chownSync(p, uid, gid);
  }
}

async function inRecovery(url: string): Promise<boolean | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return (await client.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r')).rows[0].r;
  } catch {
    return undefined;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The embedded package's `postgres` binary (its module's export, for this platform). */
async function postgresBinary(): Promise<string> {
  const binaries = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string };
  return binaries.postgres;
}

/** A port nothing listens on now, on 127.0.0.1. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
