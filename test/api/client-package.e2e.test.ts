import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Receiver } from '../support/receiver.js';
import { startTestService, TEST_KEY, type TestService } from '../support/service.js';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');

/**
 * The typed client as another repository gets it: `npm run client:pack` makes the
 * tarball, a project of its own (a temp folder with its own package.json) installs it
 * with npm, calls a running service with it, and type-checks its own code against it.
 */
describe('client package (npm run client:pack)', () => {
  let service: TestService;
  let receiver: Receiver;
  let dir: string;
  let consumer: string;

  beforeAll(async () => {
    [service, receiver, dir] = await Promise.all([startTestService(), Receiver.start(), mkdtemp(join(tmpdir(), 'client-package-'))]);
    const { stdout } = await run(process.execPath, [join(ROOT, 'scripts/client-pack.mjs'), join(dir, 'pack')], { cwd: ROOT });
    const tarball = stdout.trim().split('\n').at(-1)!;
    expect(tarball).toMatch(/callback-dispatch-client-\d+\.\d+\.\d+\.tgz$/);
    consumer = join(dir, 'consumer');
    await run('mkdir', ['-p', consumer]);
    await writeFile(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }));
    await run('npm', ['install', tarball, '--no-audit', '--no-fund', '--prefer-offline'], { cwd: consumer, timeout: 5 * 60_000 });
  }, 6 * 60_000);
  afterAll(async () => {
    await service?.dispose();
    await receiver?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('should send a batch and read it back through the installed package', async () => {
    await writeFile(
      join(consumer, 'send.mjs'),
      `import { createApiClient, unwrap, ApiError } from '@callback-dispatch/client';
const api = createApiClient({ baseUrl: process.env.URL, key: process.env.KEY });
const accepted = await unwrap(api.POST('/v1/batches', { body: { label: 'from outside', callbacks: [{ url: process.env.TARGET, externalId: 'x-1' }] } }));
let batch;
for (;;) {
  batch = await unwrap(api.GET('/v1/batches/{id}', { params: { path: { id: accepted.id } } }));
  if (batch.status === 'completed') break;
  await new Promise((r) => setTimeout(r, 100));
}
let missing;
try {
  await unwrap(api.GET('/v1/batches/{id}', { params: { path: { id: '01a22c5c-0000-7000-8000-000000000000' } } }));
} catch (error) {
  missing = error instanceof ApiError ? error.code : String(error);
}
const { default: document } = await import('@callback-dispatch/client/openapi.json', { with: { type: 'json' } });
console.log(JSON.stringify({ externalId: accepted.callbacks[0].externalId, status: batch.status, succeeded: batch.counts.succeeded, missing, openapi: document.openapi }));
`,
    );
    const { stdout } = await run(process.execPath, ['send.mjs'], {
      cwd: consumer,
      env: { PATH: process.env.PATH, URL: service.url, KEY: TEST_KEY, TARGET: `${receiver.url}/from-outside` },
      timeout: 30_000,
    });
    expect(JSON.parse(stdout)).toEqual({ externalId: 'x-1', status: 'completed', succeeded: 1, missing: 'not_found', openapi: '3.1.0' });
    expect(receiver.requests.filter((r) => r.url === '/from-outside')).toHaveLength(1);
  });

  it("should type the consumer's calls: routes, bodies and answers", async () => {
    await writeFile(
      join(consumer, 'typed.ts'),
      `import { createApiClient, type Schemas } from '@callback-dispatch/client';
const api = createApiClient({ baseUrl: 'http://127.0.0.1:3000', key: 'cbk_…' });
const body: Schemas['CreateBatchDto'] = { callbacks: [{ url: 'https://example.com/hooks/a' }] };
export async function send(): Promise<string | undefined> {
  const { data } = await api.POST('/v1/batches', { body });
  return data?.id;
}
// @ts-expect-error no such route
void api.GET('/v1/no-such-route');
// @ts-expect-error a batch needs its callbacks
export const wrong: Schemas['CreateBatchDto'] = { label: 'x' };
`,
    );
    await writeFile(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        // skipDefaultLibCheck: TypeScript's own lib files (ES2022, DOM) are not checked, most of tsc's time; the
        // package's declarations and those of its dependency are, as the consumer's code is.
        compilerOptions: {
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          lib: ['ES2022', 'DOM'],
          strict: true,
          noEmit: true,
          types: [],
          skipDefaultLibCheck: true,
        },
        files: ['typed.ts'],
      }),
    );
    // Fails on any type error, and on an @ts-expect-error that expects none (as it would if the package's types were any).
    const checked = await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', consumer], { cwd: consumer }).then(
      () => 'ok',
      (error: { stdout?: string }) => error.stdout ?? String(error),
    );
    expect(checked).toBe('ok');
  });
});
