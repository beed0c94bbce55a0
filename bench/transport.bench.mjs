// The send path alone, no database: the service's HttpTransport (HttpService's axios
// instance with the undici adapter, timing and snippet capture) against a bare
// undici rolling window, same receiver, same window, same run. The gap is what the
// axios layer and the per-call bookkeeping cost.
//   node bench/transport.bench.mjs          (BENCH_N, BENCH_WINDOW to change the size)
import { BenchReceiver } from './lib/receiver.mjs';
import { distModule, main, percentile, row } from './lib/harness.mjs';
import { durationErrors, undiciWindow } from './lib/undici-window.mjs';

const N = Number(process.env.BENCH_N ?? 20_000);
const WINDOW = Number(process.env.BENCH_WINDOW ?? 200);

/** The same rolling window as undiciWindow, each call through `transport.send`. */
async function transportWindow(transport, url, total, window, durations = new Map()) {
  let started = 0;
  let failed = 0;
  const t0 = performance.now();
  await new Promise((resolve) => {
    let finished = 0;
    const next = () => {
      if (started >= total) {
        if (finished === started) resolve();
        return;
      }
      started++;
      const call = {
        url,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'webhook-id': `t-${started}` },
        body: '{"event":"bench"}',
        timeoutMs: 15_000,
      };
      transport.send(call).then((r) => {
        if (r.outcome !== 'success') failed++;
        durations.set(call.headers['webhook-id'], r.trace.durationMs);
        finished++;
        next();
      });
    };
    for (let i = 0; i < window; i++) next();
  });
  if (failed > 0) throw new Error(`${failed} calls through the transport failed`);
  return total / ((performance.now() - t0) / 1000);
}

export async function transportScenario() {
  const { HttpService } = await import('@nestjs/axios');
  const { HttpTransport } = await distModule('dispatch/transport/http.transport.js');
  const { dispatchAxios } = await distModule('dispatch/transport/dispatch.axios.js');
  const { loadConfig } = await distModule('config/app.config.js');
  const receiver = await BenchReceiver.start({ record: true });
  const transport = new HttpTransport(new HttpService(dispatchAxios()), loadConfig({}, { allowPrivateNetworks: ['127.0.0.0/8'] }));
  const url = `${receiver.url()}/hook`;
  try {
    await undiciWindow({ urls: [url], total: 2_000, window: WINDOW });
    await transportWindow(transport, url, 2_000, WINDOW);
    await receiver.records(); // forget the warm-up requests
    const bare = await undiciWindow({ urls: [url], total: N, window: WINDOW, timed: true });
    const bareErrors = durationErrors(bare.durations, await receiver.records());
    const durations = new Map();
    const service = await transportWindow(transport, url, N, WINDOW, durations);
    const errors = durationErrors(durations, await receiver.records());
    // Baseline of the accuracy rows: the bare window's own durations (headers
    // written → response headers read) against the same receiver's clock.
    return [
      row(`send path only: HttpService + undici adapter, window ${WINDOW} (no database)`, service, 'calls/s', { baseline: bare.perSecond }),
      row('  recorded duration − receiver-side time, p50 (send path alone, full load)', percentile(errors, 50), 'ms', {
        baseline: percentile(bareErrors, 50),
        higherIsBetter: false,
      }),
      row('  p99 of the same', percentile(errors, 99), 'ms', { baseline: percentile(bareErrors, 99), higherIsBetter: false }),
    ];
  } finally {
    await transport.onApplicationShutdown();
    await receiver.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(transportScenario);
}
