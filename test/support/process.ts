import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { directUrlOf } from './database.js';
import { FaultProxy } from './fault-proxy.js';
import { checkedFetch } from './openapi-validator.js';
import { TEST_KEY, TEST_SECRETS_KEY } from './service.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const MAIN = path.join(ROOT, process.env.SERVICE_DIST ?? 'dist', 'main.js');

export interface ServiceProcess {
  proc: ChildProcess;
  url: string;
  output: () => string;
  /** Resolves with the exit code (or signal name). */
  exited: Promise<number | string>;
  kill: (signal: NodeJS.Signals) => void;
  /** SIGTERM if still running, then wait for the exit. */
  stop: () => Promise<void>;
}

/**
 * Every service process a test file spawned and that still runs: killed when the
 * file's worker exits, so a test that failed before its own clean-up (a timeout,
 * an assertion in a hook) leaves no service behind to load the machine.
 */
const spawned = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of spawned) p.kill('SIGKILL');
});

/**
 * The built service (`dist/main.js`, made by `npm test`'s build step) as a real
 * child process, for crash, shutdown and many-worker tests. A DATABASE_URL on the
 * run's PgBouncer (TEST_PGBOUNCER=1) gets its DATABASE_DIRECT_URL beside it.
 */
export async function spawnService(
  env: Record<string, string>,
  timeoutMs = 30_000,
  /** Another layout's entry point and working folder (a deployed dist/): this checkout's dist/main.js by default. */
  at: { main: string; cwd: string } = { main: MAIN, cwd: ROOT },
): Promise<ServiceProcess> {
  if (!existsSync(at.main)) throw new Error(`${at.main} is missing: run \`npm run build\` first (npm test does)`);
  const directUrl = env.DATABASE_URL && directUrlOf(env.DATABASE_URL);
  if (directUrl && directUrl !== env.DATABASE_URL && !env.DATABASE_DIRECT_URL) env = { ...env, DATABASE_DIRECT_URL: directUrl };
  const proc = spawn(process.execPath, [at.main], {
    cwd: at.cwd,
    env: {
      PATH: process.env.PATH ?? '',
      PORT: '0',
      ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8',
      BOOTSTRAP_API_KEY: TEST_KEY,
      SECRETS_KEY: TEST_SECRETS_KEY,
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  spawned.add(proc);
  proc.on('exit', () => spawned.delete(proc));
  let out = '';
  proc.stdout!.on('data', (c) => (out += c));
  proc.stderr!.on('data', (c) => (out += c));
  const exited = new Promise<number | string>((resolve) => proc.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      // not left running behind the failed test
      proc.kill('SIGKILL');
      reject(new Error(`service did not start in ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    const check = () => {
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    proc.stdout!.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`service exited (${code}) before listening:\n${out}`));
    });
  });
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    await exited;
  };
  return { proc, url, output: () => out, exited, kill: (signal) => proc.kill(signal), stop };
}

/** POST/GET against a spawned service with the test key; the answer is checked against the document it serves (test/support/openapi-validator.ts). */
export async function call(url: string, pathname: string, init: { method?: string; json?: unknown } = {}) {
  const res = await checkedFetch(url, `${url}${pathname}`, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${TEST_KEY}`, ...(init.json !== undefined && { 'content-type': 'application/json' }) },
    body: init.json !== undefined ? JSON.stringify(init.json) : undefined,
  });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the tests assert on the shape at run time
  return { status: res.status, body: (await res.json().catch(() => undefined)) as any };
}

/**
 * A worker process whose Postgres connections go through a fault proxy of its own on
 * `host` (test/support/fault-proxy.ts), polling every `pollMs`, with a 1 s lease margin
 * and `lockTimeoutMs` as LEADER_LOCK_TIMEOUT_MS. The proxy and the process are pushed
 * to `started`, for the caller's afterAll to end.
 */
export async function workerBehindProxy(
  directUrl: string,
  host: string,
  { pollMs, lockTimeoutMs }: { pollMs: number; lockTimeoutMs: number },
  started: { proxies: FaultProxy[]; processes: ServiceProcess[] },
): Promise<{ worker: ServiceProcess; proxy: FaultProxy }> {
  const target = new URL(directUrl);
  const proxy = await FaultProxy.start({ host: target.hostname, port: Number(target.port) }, host);
  started.proxies.push(proxy);
  const worker = await spawnService({
    DATABASE_URL: proxy.urlFor(directUrl),
    DISPATCH_POLL_MS: String(pollMs),
    DISPATCH_LEASE_MARGIN_MS: '1000',
    LEADER_LOCK_TIMEOUT_MS: String(lockTimeoutMs),
    LOG_LEVEL: 'log',
  });
  started.processes.push(worker);
  return { worker, proxy };
}
