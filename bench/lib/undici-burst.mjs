// The baseline of the scale scenario: a bare undici client that sends `total` POSTs
// to `urls` (round robin) all at once, each on a connection of its own that it
// opens then (a fresh Agent, no pool limit), timed from the first send to the last
// answer, with the child's peak RSS. It runs in a child process of its own, like the
// service: its sockets do not count against the bench process's descriptor limit
// (which already holds the receivers' side of every connection), and its event loop
// is not the bench's.
//   undiciBurst({ urls, total }) → { seconds, failed, peakRssMb }
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';

const SELF = fileURLToPath(import.meta.url);

/**
 * Runs one burst in a child process; bounded by `timeoutMs` (the child is killed).
 * BURST_NODE_ARGS: node flags for the child, e.g. --cpu-prof.
 */
export function undiciBurst({ urls, total, timeoutMs = 60_000 }) {
  const execArgv = (process.env.BURST_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = fork(SELF, [], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`undici burst did not finish within ${timeoutMs} ms`));
    }, timeoutMs + 5_000);
    child.once('message', (result) => {
      clearTimeout(timer);
      child.disconnect();
      resolve(result);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`undici burst exited with ${code}`));
    });
    child.send({ urls, total, timeoutMs });
  });
}

/** In the child: all `total` requests started in one go on a fresh Agent. */
async function burst({ urls, total }) {
  const agent = new Agent({ connections: null, pipelining: 1, keepAliveTimeout: 4_000, headersTimeout: 0, bodyTimeout: 0 });
  const headers = { 'content-type': 'application/json', 'user-agent': 'bench-baseline', 'webhook-id': 'baseline' };
  let failed = 0;
  const t0 = performance.now();
  const calls = Array.from({ length: total }, (_, i) =>
    request(urls[i % urls.length], { dispatcher: agent, method: 'POST', headers, body: `{"event":"bench","n":${i}}` })
      .then((res) => res.body.dump().then(() => res.statusCode < 300 || failed++))
      .catch(() => failed++),
  );
  await Promise.all(calls);
  const seconds = (performance.now() - t0) / 1000;
  await agent.destroy();
  return { seconds, failed, peakRssMb: process.resourceUsage().maxRSS / 1024 };
}

if (process.argv[1] === SELF && process.send) {
  process.once('message', async (job) => {
    process.send(await burst(job), () => process.exit(0));
  });
}
