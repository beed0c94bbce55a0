// Shared pieces of the benchmarks: the bench Postgres, fresh databases, the
// service as a child process (its own event loop and its own RSS), and the table.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

export const BENCH_KEY = 'cbk_bench_admin_key_0123456789abcdef';
/** SECRETS_KEY of the services benchmarks start (DATABASE_URL needs one). */
export const BENCH_SECRETS_KEY = Buffer.alloc(32, 9).toString('base64');
/** The built service; BENCH_DIST points at another build (e.g. to compare two versions). */
const DIST = new URL(`../../${process.env.BENCH_DIST ?? 'dist'}/`, import.meta.url);
const DIST_MAIN = new URL('main.js', DIST);

/** A module of the built service (dist/ or BENCH_DIST), e.g. 'dispatch/transport/http.transport.js'. */
export function distModule(path) {
  if (!existsSync(DIST_MAIN)) throw new Error('dist/ is missing: run `npm run build` first (npm run bench does)');
  return import(new URL(path, DIST).href);
}

/** Postgres for benchmarks: DATABASE_URL's server, or an embedded one under BENCH_DATA_DIR. */
export async function benchPostgres() {
  return process.env.DATABASE_URL ? serverAt(process.env.DATABASE_URL) : embeddedBenchPostgres();
}

/** A running server given by URL (its database part is replaced per scenario); stopping it is not ours. */
export function serverAt(url) {
  const base = new URL(url);
  return { serverUrl: (db) => Object.assign(new URL(base), { pathname: `/${db}` }).toString(), stop: async () => undefined };
}

/** The embedded PostgreSQL 18 of the built service under BENCH_DATA_DIR (.data/bench), port BENCH_PG_PORT (54445). */
export async function embeddedBenchPostgres() {
  if (!existsSync(DIST_MAIN)) throw new Error('dist/ is missing: run `npm run build` first (npm run bench does)');
  const { startEmbeddedPostgres } = await import(new URL('database/embedded-postgres.js', DIST).href);
  const dir = process.env.BENCH_DATA_DIR ?? '.data/bench';
  const port = Number(process.env.BENCH_PG_PORT ?? 54445);
  return startEmbeddedPostgres(dir, port);
}

/** Drops and creates `name` on the bench server; the service migrates it at start. */
export async function freshDatabase(server, name) {
  const admin = new pg.Client({ connectionString: server.serverUrl('postgres') });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return server.serverUrl(name);
}

export async function databaseExists(server, name) {
  const admin = new pg.Client({ connectionString: server.serverUrl('postgres') });
  await admin.connect();
  const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
  await admin.end();
  return rowCount > 0;
}

/** The server process of `db`'s connection (to read its CPU). */
export const backendPidOf = async (db) => (await db.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;

export async function connect(url) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

/** BENCH_SERVICE_ENV='WRITEBACK_MAX_ROWS=2000 DISPATCH_CLAIM_BATCH=1000': settings to try, on top of every scenario's. */
function serviceEnvOverrides() {
  const pairs = (process.env.BENCH_SERVICE_ENV ?? '')
    .split(/\s+/)
    .filter(Boolean)
    .map((p) => p.split('='));
  return Object.fromEntries(pairs.filter(([k, v]) => k && v !== undefined));
}

/**
 * Starts `node dist/main.js` on `databaseUrl` with loopback allowed as a destination
 * and `env` on top; resolves once it prints its address.
 */
export async function startService(databaseUrl, env = {}) {
  // BENCH_NODE_ARGS: extra node flags for the service, e.g. --cpu-prof to see where its time goes.
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, DIST_MAIN.pathname], {
    env: {
      PATH: process.env.PATH,
      PORT: '0',
      DATABASE_URL: databaseUrl,
      ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8',
      BOOTSTRAP_API_KEY: BENCH_KEY,
      SECRETS_KEY: BENCH_SECRETS_KEY,
      LOG_LEVEL: 'warn',
      ...env,
      ...serviceEnvOverrides(),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = await new Promise((resolve, reject) => {
    // Killed when late: left running, it would outlive the benchmark and keep claiming from its database.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`service did not start within 30 s:\n${output}`));
    }, 30_000);
    const onData = (chunk) => {
      output += chunk;
      const m = /listening on (http:\/\/\S+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (c) => (output += c));
    child.once('exit', (code) => reject(new Error(`service exited with ${code}:\n${output}`)));
  });
  child.stderr.on('data', (c) => process.stderr.write(`[service] ${c}`));
  return {
    url,
    pid: child.pid,
    /** Peak and current resident set size of the service process, MB. */
    memory() {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kb = (field) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
      return { peakRssMb: kb('VmHWM') / 1024, rssMb: kb('VmRSS') / 1024 };
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

/** Polls `fn` every `everyMs` until truthy or `timeoutMs` passes (then throws). */
export async function waitUntil(fn, timeoutMs, everyMs = 20) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}

export function percentile(values, p) {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export const median = (values) => percentile(values, 50);

/**
 * One result row. `higherIsBetter` decides the ratio's direction and what meeting
 * `target` means; `baseline` is measured in the same run, or null when there is none.
 */
export function row(scenario, figure, unit, { baseline = null, target = null, higherIsBetter = true } = {}) {
  const ratio = baseline ? figure / baseline : null;
  const meets = target === null ? null : higherIsBetter ? figure >= target : figure <= target;
  return { scenario, figure, unit, baseline, ratio, target, higherIsBetter, meets };
}

const fmt = (n) => (n === null || n === undefined ? '–' : Number.isInteger(n) || Math.abs(n) >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2));

/** The results as a Markdown table (also readable in a terminal). */
export function table(rows) {
  const lines = ['| scenario | figure | baseline (same run) | ratio | target |', '| --- | ---: | ---: | ---: | --- |'];
  for (const r of rows) {
    const target = r.target === null ? '' : `${r.higherIsBetter ? '≥' : '≤'} ${fmt(r.target)} ${r.unit}${r.meets ? ' ✓' : ' ✗'}`;
    const ratio = r.ratio === null ? '' : `${r.ratio.toFixed(2)}×`;
    lines.push(`| ${r.scenario} | ${fmt(r.figure)} ${r.unit} | ${r.baseline === null ? '' : `${fmt(r.baseline)} ${r.unit}`} | ${ratio} | ${target} |`);
  }
  return lines.join('\n');
}

/**
 * Runs a scenario module's `run()` as a CLI: prints its table, exits non-zero on error.
 * `open` gives the server `run` gets (benchPostgres: DATABASE_URL's, or the embedded one).
 */
export async function main(run, open = benchPostgres) {
  const server = await open();
  try {
    const rows = await run(server);
    console.log(table(rows));
    return rows;
  } finally {
    await server.stop();
  }
}
