import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/service.js';

const ROOT = resolve(import.meta.dirname, '../..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const FIRST_USE = README.slice(README.indexOf('## First use'), README.indexOf('\n## ', README.indexOf('## First use') + 1));
/** The ```bash blocks of the First use section, in order. */
const BLOCKS = [...FIRST_USE.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1]);

async function isFree(port: number): Promise<boolean> {
  const server = net.createServer();
  const free = await new Promise<boolean>((r) => {
    server.once('error', () => r(false));
    server.listen(port, '127.0.0.1', () => r(true));
  });
  if (free) await new Promise((r) => server.close(r));
  return free;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

/** A free port for the demo's service whose embedded Postgres's port (50500 above it) is free too. */
async function freeDemoPort(): Promise<number> {
  for (;;) {
    const port = 10_000 + Math.floor(Math.random() * 5_000);
    if ((await isFree(port)) && (await isFree(port + 50_500))) return port;
  }
}

interface Shell {
  proc: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  /** Ctrl-C in its terminal: SIGINT to its whole process group (npm, sh, node). */
  interrupt: () => void;
  kill: (signal: NodeJS.Signals) => void;
}

/** Runs `script` with bash in the checkout, in a process group of its own, as a terminal would. */
function shell(script: string, env: Record<string, string>): Shell {
  const proc = spawn('bash', ['-c', script], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  proc.stdout!.on('data', (c) => (out += c));
  proc.stderr!.on('data', (c) => (out += c));
  const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
  const kill = (signal: NodeJS.Signals) => {
    try {
      process.kill(-proc.pid!, signal);
    } catch {
      // the group is gone already
    }
  };
  return { proc, output: () => out, exited, interrupt: () => kill('SIGINT'), kill };
}

/**
 * The README's first use, run as written and in order against the real service (the
 * built dist/, through `npm start` and `npm run demo`), each address and folder its own:
 * the README's 127.0.0.1:3000 and :4555 become free ports, `.data` a temp folder. Every
 * answer the README shows is checked. ~40 s (the demo's calls take 13 s).
 */
describe('README: First use, as written', () => {
  let dir: string;
  let env: Record<string, string>;
  let service: Shell | undefined;
  let terminal: Shell | undefined;
  let url: string;
  let receiverPort: number;
  /** The README's text with this run's addresses. */
  const here = (text: string) =>
    text.replaceAll('http://127.0.0.1:3000', url).replaceAll('127.0.0.1:4555', `127.0.0.1:${receiverPort}`).replaceAll('--port 4555', `--port ${receiverPort}`);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'readme-first-use-'));
    const [port, pgPort, demoPort] = [await freePort(), await freePort(), await freeDemoPort()];
    receiverPort = await freePort();
    url = `http://127.0.0.1:${port}`;
    // What a shell in the checkout has, but for the ports and the data folder.
    env = { PORT: String(port), EMBEDDED_PG_PORT: String(pgPort), DATA_DIR: join(dir, 'data'), DEMO_PORT: String(demoPort), LOG_LEVEL: 'warn' };
    for (const name of ['DATABASE_URL', 'BOOTSTRAP_API_KEY', 'ALLOW_PRIVATE_NETWORKS', 'CALLBACKS_URL', 'CALLBACKS_API_KEY', 'SECRETS_KEY']) env[name] = '';
  });
  afterAll(async () => {
    terminal?.interrupt();
    service?.interrupt();
    await Promise.all([terminal?.exited, service?.exited]);
    // The service drains after its shell is gone: wait until it gave the folder back (else stop it for good).
    if (env) await waitFor(() => !existsSync(join(env.DATA_DIR, 'service.lock')), 30_000, 100).catch(() => service?.kill('SIGKILL'));
    if (dir) await rm(dir, { recursive: true, force: true });
    await rm(join(ROOT, 'orders.json'), { force: true }); // the README's batch file, written in the checkout as a user's would be
  });

  it('should hold the blocks this test runs', () => {
    expect(README.startsWith('# callback-dispatch\n\n```bash\nnpm install && npm start ')).toBe(true);
    expect(BLOCKS.map((b) => b.split('\n')[0])).toEqual([
      'npm run demo',
      'ALLOW_PRIVATE_NETWORKS=127.0.0.0/8 npm start',
      'export CALLBACKS_URL=http://127.0.0.1:3000',
      expect.stringMatching(/^curl -s -X POST \$CALLBACKS_URL\/v1\/batches /),
    ]);
  });

  it('should print an admin key on the first npm start, and stop on Ctrl-C', async () => {
    const first = shell('npm start', env);
    await waitFor(() => /listening on/.test(first.output()), 120_000, 100);
    expect(first.output()).toMatch(
      new RegExp(
        `callback dispatch service \\(all\\) listening on ${url}\\n {2}API docs: {2}${url}/docs\\n {2}API key: {3}cbk_\\S+ {3}\\(admin; shown once, store it now\\)`,
      ),
    );
    // The README's "a second `npm start` in the same folder is refused, naming the first (its pid and
    // address)" is data-dir.e2e.test.ts's first test (the message, with the first's pid and address), and
    // its non-zero exit is that file's failed start's: `npm start` is `node dist/main.js`, run above.
    first.interrupt();
    // The service drains and stops its embedded Postgres, then gives the folder back.
    await waitFor(() => !existsSync(join(env.DATA_DIR, 'service.lock')), 30_000, 100);
    expect(first.output()).toMatch(/SIGINT: draining in-flight callbacks and stopping/);
  }, 180_000);

  it('should run the demo on its own service: 24 s serially, the slowest call all at once, 5 s with the timeout', async () => {
    const demo = shell(BLOCKS[0], env);
    expect(await demo.exited, demo.output()).toBe(0);
    expect(demo.output()).toMatch(/serially: 24 s\. {2}all at once: 7\.\d s, the slowest call\./);
    expect(demo.output()).toMatch(/with a 5 s timeout: 5\.\d s; the calls sleeping 5 and 7 s ended as code=0 at 5 s/);
  }, 180_000);

  it("should start with loopback allowed, make a key without one, receive the batch's calls and draw them", async () => {
    service = shell(BLOCKS[1], env);
    await waitFor(() => /listening on/.test(service!.output()), 120_000, 100);
    // The first key was printed by the first start; the README's way needs none: --local.
    expect(service.output()).toMatch(/no key at hand\? `npx callbacks keys create <name> --admin --local`/);

    // The second terminal, as written, and what it was left with (its key), for the curl block.
    terminal = shell(`${here(BLOCKS[2])}\necho "KEY=$CALLBACKS_API_KEY"`, env);
    // The terminal's job (the receiver) keeps running: wait for the last command's answer.
    await waitFor(() => /^KEY=cbk_/m.test(terminal!.output()), 60_000, 100).catch((error: Error) => {
      throw new Error(`${error.message}:\n${terminal!.output()}\n--- service:\n${service!.output()}`);
    });
    const out = terminal.output();
    const lines = out.split('\n');
    const id = lines.find((l) => /^[0-9a-f]{8}-[0-9a-f]{4}-/.test(l));
    expect(id, out).toBeDefined();
    expect(out).toMatch(/^\[#{30}\] 2\/2 done {2}\(1 ok, 1 failed, 0 open\) {2}\d+\.\d s$/m);
    const a = lines.findIndex((l) => l.startsWith(`(http://127.0.0.1:${receiverPort}/a?sleep=300 :: code=200, start=0.0`));
    const b = lines.findIndex((l) => l.startsWith(`(http://127.0.0.1:${receiverPort}/b?sleep=2000 :: code=0, start=0.0`));
    expect(a, out).toBeGreaterThanOrEqual(0);
    expect(b, out).toBeGreaterThanOrEqual(0);
    // The 300 ms call (and a fresh process's first connection), and the 500 ms timeout.
    expect(Number(/total=(\d\.\d{3})\)$/.exec(lines[a])![1])).toBeGreaterThanOrEqual(0.3);
    expect(Number(/total=(\d\.\d{3})\)$/.exec(lines[a])![1])).toBeLessThan(1);
    expect(lines[b]).toMatch(/total=0\.5\d\d\)$/);
    expect(lines[a + 1]).toMatch(/^\[ *=+ *\]$/);
    expect(lines[b + 1]).toMatch(/^\[ *=+ *\]$/);
    expect(out).toMatch(/^2 calls, span 0\.5\d\d s from /m);
    // The receiver printed each call it got (callbacks receive).
    expect(out).toMatch(/^POST \/a\?sleep=300 webhook-id=[0-9a-f-]{36} {"order":1}$/m);

    // The curl block, line by line with its answers, as the README shows them.
    const key = /^KEY=(cbk_\S+)$/m.exec(out)![1];
    const curlEnv = { ...env, CALLBACKS_URL: url, CALLBACKS_API_KEY: key };
    const commands = here(BLOCKS[3])
      .split('\n')
      .filter((l) => l.startsWith('curl '));
    const run = async (command: string) => {
      const s = shell(command, curlEnv);
      expect(await s.exited).toBe(0);
      return s.output();
    };
    const accepted = JSON.parse(await run(commands[0]));
    expect(accepted).toMatchObject({
      id: expect.any(String),
      callbacks: [
        { id: expect.any(String), externalId: null },
        { id: expect.any(String), externalId: 'o-2' },
      ],
    });
    const fill = (c: string) => c.replaceAll('<batch>', accepted.id).replaceAll('<callback>', accepted.callbacks[0].id);
    const batch = await waitFor(
      async () => {
        const b = JSON.parse(await run(fill(commands[1])));
        return b.status === 'completed' && b;
      },
      10_000,
      100,
    );
    expect(batch).toMatchObject({
      id: accepted.id,
      label: 'orders',
      status: 'completed',
      total: 2,
      counts: { pending: 0, in_flight: 0, succeeded: 1, failed: 1, cancelled: 0 },
    });
    const diagram = await run(fill(commands[2]));
    expect(diagram).toMatch(new RegExp(`^\\(http://127\\.0\\.0\\.1:${receiverPort}/a\\?sleep=300 :: code=200, `, 'm'));
    expect(diagram).toMatch(new RegExp(`^\\(http://127\\.0\\.0\\.1:${receiverPort}/b\\?sleep=2000 :: code=0, `, 'm'));
    const callback = JSON.parse(await run(fill(commands[3])));
    expect(callback).toMatchObject({
      id: accepted.callbacks[0].id,
      batchId: accepted.id,
      url: `http://127.0.0.1:${receiverPort}/a?sleep=300`,
      status: 'succeeded',
      attempts: [{ number: 1, statusCode: 200, outcome: 'success' }],
    });
    // Every answer the README shows, in the README.
    for (const shown of [
      '# → {"id":"<batch>","callbacks":[{"id":"<callback>","externalId":null},{"id":"…","externalId":"o-2"}]}',
      '"status":"completed","total":2,"counts":{"pending":0,"in_flight":0,"succeeded":1,"failed":1,"cancelled":0}',
      '[##############################] 2/2 done  (1 ok, 1 failed, 0 open)',
      '2 calls, span 0.500 s from ',
    ]) {
      expect(FIRST_USE).toContain(shown);
    }
  }, 180_000);
});
