import { BenchReceiver } from './lib/receiver.mjs';
import { percentile } from './lib/harness.mjs';
import { durationErrors, undiciWindow } from './lib/undici-window.mjs';
const receiver = await BenchReceiver.start({ record: true });
for (const window of [100, 50, 200]) {
  const urls = [receiver.url() + '/hook?sleep=20'];
  await undiciWindow({ urls, total: 1000, window });
  await receiver.reset();
  const r = await undiciWindow({ urls, total: 5000, window, timed: true });
  const e = durationErrors(r.durations, await receiver.records());
  console.log(window, Math.round(r.perSecond), 'p50', percentile(e, 50).toFixed(2), 'p99', percentile(e, 99).toFixed(2));
}
await receiver.close();
