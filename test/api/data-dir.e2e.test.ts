import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService } from '../../src/app.factory.js';
import { loadConfig } from '../../src/config/app.config.js';
import { spawnService, type ServiceProcess } from '../support/process.js';
import { TEST_KEY, TEST_SECRETS_KEY, waitFor } from '../support/service.js';

const BIN = (JSON.parse(readFileSync('package.json', 'utf8')) as { bin: Record<string, string> }).bin.callbacks;

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

async function answers(port: number): Promise<boolean> {
  const client = new pg.Client({ connectionString: `postgresql://postgres:postgres@127.0.0.1:${port}/postgres`, connectionTimeoutMillis: 1000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false; // not reachable: the answer
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** `callbacks keys create … --local` as a user runs it, in the checkout, with the service's DATA_DIR and EMBEDDED_PG_PORT. */
function localKey(env: Record<string, string>, name: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'keys', 'create', name, '--admin', '--local'], {
      env: { PATH: process.env.PATH, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * The service in this process, as spawnService starts one in a child (the same
 * variables): for the starts that are not about the process, which skip its ~2.5 s of
 * module loading. Its lock names this process's pid, not a child's.
 */
function startHere(env: Record<string, string>) {
  return startService(
    loadConfig({
      PORT: '0',
      ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8',
      BOOTSTRAP_API_KEY: TEST_KEY,
      SECRETS_KEY: TEST_SECRETS_KEY,
      LOG_LEVEL: 'error',
      ...env,
    }),
  );
}

/**
 * The embedded Postgres of a DATA_DIR belongs to one process: a second start on it is
 * refused, naming the first; a start that fails stops the Postgres it started; and
 * an admin key can be made without a key, straight into its database.
 */
describe('DATA_DIR and its embedded Postgres', () => {
  let dir: string;
  let env: Record<string, string>;
  let first: ServiceProcess | undefined;
  let here: Awaited<ReturnType<typeof startHere>> | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'data-dir-test-'));
    env = { DATA_DIR: dir, EMBEDDED_PG_PORT: String(await freePort()) };
  });
  afterAll(async () => {
    await first?.stop();
    await here?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('should refuse a second start on the same DATA_DIR, naming the first by pid and address', async () => {
    first = await spawnService(env, 60_000);
    const pid = first.proc.pid;
    // The second start is this process's own (the same startService, refused at the same lock), not
    // another spawn: a refused start exits non-zero as any failed one does (main.ts), checked below.
    await expect(startHere(env)).rejects.toThrow(
      new RegExp(`another process uses DATA_DIR ${dir} and its embedded Postgres: pid ${pid} \\(all, ${first.url.replace(/\./g, '\\.')}, since `),
    );
    // The first one kept its database.
    expect((await fetch(`${first.url}/health/ready`)).status).toBe(200);
  });

  it('should make an admin key without a key, while the service runs and while it does not', async () => {
    const running = await localKey(env, 'lost-my-key');
    expect(running.stderr).toMatch(/\(admin\) written to the embedded database under .*: shown once, store it now/);
    expect(running.code).toBe(0);
    const key = running.stdout.trim();
    expect(key).toMatch(/^cbk_[\w-]{32}$/);
    expect((await fetch(`${first!.url}/v1/keys`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);

    await first!.stop();
    const stopped = await localKey(env, 'lost-it-again');
    expect(stopped.code, stopped.stderr).toBe(0);
    // It started the embedded Postgres for the moment, and stopped it again.
    expect(await answers(Number(env.EMBEDDED_PG_PORT))).toBe(false);
    expect(existsSync(join(dir, 'service.lock'))).toBe(false);
    first = undefined;
    here = await startHere(env);
    expect((await fetch(`${here.url}/v1/keys`, { headers: { authorization: `Bearer ${stopped.stdout.trim()}` } })).status).toBe(200);
  });

  it('should stop the embedded Postgres it started when the start fails after it', async () => {
    // A migration recorded with another checksum: the start stops at the migrations, after Postgres started.
    const client = new pg.Client({ connectionString: `postgresql://postgres:postgres@127.0.0.1:${env.EMBEDDED_PG_PORT}/callbacks` });
    await client.connect();
    await client.query(
      `UPDATE "_prisma_migrations" SET checksum = repeat('0', 64) WHERE migration_name = (SELECT min(migration_name) FROM "_prisma_migrations")`,
    );
    await client.end();
    await here!.close();
    here = undefined;
    expect(await answers(Number(env.EMBEDDED_PG_PORT))).toBe(false);

    // A failed start (this one, a DATA_DIR refused, a port taken) ends the process non-zero (main.ts).
    await expect(spawnService(env, 60_000)).rejects.toThrow(
      /service exited \([1-9]\d*\) before listening:[\s\S]*migration \S+ was edited after it was applied/,
    );
    await waitFor(async () => !(await answers(Number(env.EMBEDDED_PG_PORT))), 10_000, 100);
    expect(existsSync(join(dir, 'pg', 'postmaster.pid'))).toBe(false);
    expect(existsSync(join(dir, 'service.lock'))).toBe(false);
  });
});
