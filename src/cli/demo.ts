// `npm run demo`: the point of the service in fifteen seconds. Starts a receiver and
// the service on its own port (DEMO_PORT, 3900), data directory (DATA_DIR/demo,
// .data/demo) and embedded Postgres (DEMO_PORT + 50500), sends the classic batch of 8
// calls sleeping 3, 2, 5, 4, 7, 2, 1 and 0 s, then the same batch with a 5 s timeout,
// prints both sequence diagrams, and stops what it started. `npm run demo -- --url URL
// --key KEY` runs it against a service of yours instead (which must allow 127.0.0.0/8
// as a destination); CALLBACKS_URL and CALLBACKS_API_KEY, the CLI's, are not read.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { connect, type CliApi } from './api.client.js';
import { sequenceText, waitForBatch, type Output } from './cli.commands.js';
import { startReceiver } from './receive.command.js';

const SLEEPS_S = [3, 2, 5, 4, 7, 2, 1, 0];
const DEMO_PORT = Number(process.env.DEMO_PORT ?? 3900);
const DEMO_DATA_DIR = path.join(process.env.DATA_DIR || '.data', 'demo');
const DEMO_KEY = 'cbk_demo_key_0123456789abcdef';
const START_TIMEOUT_MS = 60_000;
const ANSWER_AFTER_MS = 50;

const io: Output = { out: (t) => console.log(t.replace(/\n$/, '')), err: (t) => process.stderr.write(t), tty: Boolean(process.stderr.isTTY) };

/**
 * The receiver answers `/?sleep=S` after S seconds and ANSWER_AFTER_MS more, like a slow
 * PHP endpoint: its S seconds of work, then the answer. Answering at exactly S s tied a
 * call of 5 s with the 5 s timeout, and which one's timer fired first decided the
 * outcome (a CI run saw the 5 s call answer 200).
 */
async function isUp(url: string, timeoutMs: number): Promise<boolean> {
  try {
    return (await fetch(`${url}/health/live`, { signal: AbortSignal.timeout(timeoutMs) })).ok;
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
      DATA_DIR: DEMO_DATA_DIR,
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
  while (!(await isUp(url, 1000))) {
    if (child.exitCode !== null || Date.now() > until) {
      child.kill('SIGTERM');
      throw new Error(`the demo service did not start (are ports ${DEMO_PORT} and ${DEMO_PORT + 50500} free?):\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return child;
}

async function runBatch(api: CliApi, receiver: string, title: string, extra: { timeoutMs: number }): Promise<{ makespanMs: number; succeeded: number }> {
  io.out(`\n== ${title}`);
  const callbacks = SLEEPS_S.map((s, i) => ({ url: `${receiver}/?sleep=${s}`, externalId: `call-${i}`, maxAttempts: 1, ...extra }));
  const { id } = await api.call(api.client.POST('/v1/batches', { body: { label: `demo: ${title}`, callbacks } }));
  io.out(`batch ${id}`);
  const done = await waitForBatch(api, id, 60_000, io);
  io.out(await sequenceText(api, id));
  return { makespanMs: done?.makespanMs ?? Number.NaN, succeeded: done?.counts.succeeded ?? 0 };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { url: { type: 'string' }, key: { type: 'string' } } });
  if (values.url && !values.key) throw new Error('--url needs --key: a key of that service');
  const url = (values.url ?? `http://127.0.0.1:${DEMO_PORT}`).replace(/\/+$/, '');
  const key = values.url ? values.key : DEMO_KEY;
  const receiver = await startReceiver(0, undefined, ANSWER_AFTER_MS, 1000);
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
    // A service named by --url may be busy: it gets 10 s to answer. Without --url a
    // second is enough to tell that nothing runs on the demo's port.
    if (!(await isUp(url, values.url ? 10_000 : 1000))) {
      if (values.url) throw new Error(`nothing answers at ${url}`);
      io.out(`starting the service on ${url} (embedded Postgres under ${DEMO_DATA_DIR})…`);
      service = await startService(url);
    }
    const api = connect(url, key);
    const probe = await api.client.GET('/v1/batches', { params: { query: { limit: 1 } } });
    if (probe.response.status === 401)
      throw new Error(`${url} does not know that key (401): ${values.url ? 'pass one of its keys with --key' : 'stop what runs there'}`);
    const serial = SLEEPS_S.reduce((a, b) => a + b, 0);
    io.out(`receiver ${receiver.url}: each call sleeps ?sleep= seconds (${SLEEPS_S.join(', ')}); one after another they take ${serial} s`);
    const first = await runBatch(api, receiver.url, '8 calls, all at once', { timeoutMs: 10_000 });
    if (first.succeeded === 0) throw new Error(`no call succeeded: does ${url} allow 127.0.0.0/8 as a destination (ALLOW_PRIVATE_NETWORKS)?`);
    const a = first.makespanMs;
    const b = (await runBatch(api, receiver.url, 'the same 8 calls with a 5 s timeout', { timeoutMs: 5_000 })).makespanMs;
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
