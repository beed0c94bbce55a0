// `npm run demo`: the point of the service in fifteen seconds. Starts a receiver and
// (unless CALLBACKS_URL names a running one) the service on its own port, data
// directory and embedded Postgres, sends the classic batch of 8 calls sleeping
// 3, 2, 5, 4, 7, 2, 1 and 0 s, then the same batch with a 5 s timeout, prints both
// sequence diagrams, and stops what it started.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { connect, type CliApi } from './api.client.js';
import { sequenceText, waitForBatch, type Output } from './cli.commands.js';

const SLEEPS_S = [3, 2, 5, 4, 7, 2, 1, 0];
const DEMO_PORT = 3900;
const DEMO_KEY = 'cbk_demo_key_0123456789abcdef';
const START_TIMEOUT_MS = 60_000;
const ANSWER_AFTER_MS = 50;

const io: Output = { out: (t) => console.log(t.replace(/\n$/, '')), err: (t) => process.stderr.write(t), tty: Boolean(process.stderr.isTTY) };

/**
 * A receiver answering `/?sleep=S` after S seconds, like a slow PHP endpoint, and
 * ANSWER_AFTER_MS more: its S seconds of work, then the answer. Answering at exactly
 * S s tied a call of 5 s with the 5 s timeout, and which one's timer fired first
 * decided the outcome (a CI run saw the 5 s call answer 200).
 */
async function startReceiver(): Promise<{ url: string; close: () => void }> {
  const server = http.createServer((req, res) => {
    const sleep = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('sleep') ?? 0);
    req.resume();
    const timer = setTimeout(() => res.end('ok'), Math.min(Math.max(sleep, 0), 30) * 1000 + ANSWER_AFTER_MS);
    res.on('close', () => clearTimeout(timer));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const close = () => {
    server.closeAllConnections();
    server.close();
  };
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close };
}

async function isUp(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/health/live`, { signal: AbortSignal.timeout(1000) })).ok;
  } catch {
    return false;
  }
}

/** The demo's own service: `node dist/main.js` with loopback allowed and a known key. */
async function startService(url: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [fileURLToPath(new URL('../main.js', import.meta.url))], {
    env: {
      ...process.env,
      PORT: String(DEMO_PORT),
      HOST: '127.0.0.1',
      DATA_DIR: '.data/demo',
      EMBEDDED_PG_PORT: String(DEMO_PORT + 50500),
      ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8',
      BOOTSTRAP_API_KEY: DEMO_KEY,
      LOG_LEVEL: 'warn',
      DATABASE_URL: '',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (c) => {
    stderr += c;
  });
  const until = Date.now() + START_TIMEOUT_MS;
  while (!(await isUp(url))) {
    if (child.exitCode !== null || Date.now() > until) {
      child.kill('SIGTERM');
      throw new Error(`the demo service did not start (are ports ${DEMO_PORT} and ${DEMO_PORT + 50500} free?):\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return child;
}

async function runBatch(api: CliApi, receiver: string, title: string, extra: { timeoutMs: number }): Promise<number> {
  io.out(`\n== ${title}`);
  const callbacks = SLEEPS_S.map((s, i) => ({ url: `${receiver}/?sleep=${s}`, externalId: `call-${i}`, maxAttempts: 1, ...extra }));
  const { id } = await api.call(api.client.POST('/v1/batches', { body: { label: `demo: ${title}`, callbacks } }));
  io.out(`batch ${id}`);
  const done = await waitForBatch(api, id, 60_000, io);
  io.out(await sequenceText(api, id));
  return done?.makespanMs ?? Number.NaN;
}

async function main(): Promise<void> {
  const url = (process.env.CALLBACKS_URL ?? `http://127.0.0.1:${DEMO_PORT}`).replace(/\/+$/, '');
  const key = process.env.CALLBACKS_URL ? process.env.CALLBACKS_API_KEY : DEMO_KEY;
  const receiver = await startReceiver();
  let service: ChildProcess | undefined;
  // SIGTERM lets the service drain and stop its embedded Postgres; wait for that, bounded.
  const stop = async () => {
    receiver.close();
    if (!service || service.exitCode !== null) return;
    const exited = new Promise((r) => service!.once('exit', r));
    service.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
  };
  process.once('SIGINT', () => void stop().then(() => process.exit(130)));
  try {
    if (!(await isUp(url))) {
      if (process.env.CALLBACKS_URL) throw new Error(`nothing answers at ${url}`);
      io.out(`starting the service on ${url} (embedded Postgres under .data/demo)…`);
      service = await startService(url);
    }
    const api = connect(url, key);
    const serial = SLEEPS_S.reduce((a, b) => a + b, 0);
    io.out(`receiver ${receiver.url}: each call sleeps ?sleep= seconds (${SLEEPS_S.join(', ')}); one after another they take ${serial} s`);
    const a = await runBatch(api, receiver.url, '8 calls, all at once', { timeoutMs: 10_000 });
    const b = await runBatch(api, receiver.url, 'the same 8 calls with a 5 s timeout', { timeoutMs: 5_000 });
    io.out(
      [
        '',
        `serially: ${serial} s.  all at once: ${(a / 1000).toFixed(1)} s, the slowest call.`,
        `with a 5 s timeout: ${(b / 1000).toFixed(1)} s; the calls sleeping ${SLEEPS_S.filter((s) => s >= 5).join(' and ')} s ended as code=0 at 5 s`,
        '  (failed attempts, recorded like any other outcome: the batch is never stuck behind them).',
        service ? 'to look closer in the dashboard, run the service yourself (README: First use) and open /dashboard' : `look closer: ${url}/dashboard`,
      ].join('\n'),
    );
  } finally {
    await stop();
  }
}

main().catch((error) => {
  console.error(`demo failed: ${error instanceof Error ? error.message : error}`);
  process.exitCode = 1;
});
