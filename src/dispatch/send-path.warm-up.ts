import type { AppConfig } from '../config/app.config.js';
import { HostQueues } from './host-limits/host.queues.js';
import type { RecordedOutcome } from './outcome.repository.js';
import type { QueuedCallback } from './producer.service.js';
import { buildRequest, toRecordedOutcome } from './request.builder.js';
import type { HttpTransport } from './transport/http.transport.js';

/** Calls the warm-up keeps in flight at once. */
const WARM_UP_WINDOW = 64;
/** Outcomes per write-back statement the warm-up runs (on ids no row has). */
const WARM_UP_WRITE_BACK = 200;

/**
 * Warms the JIT up on the send path before the first claim. `rows` are made up by
 * the producer (ProducerService.warmUp: parsed by the driver as a claim's rows are,
 * secrets attached, so they have the same shapes as real ones; WARM_UP_CALLS of
 * them). Each is pointed at a throw-away server on loopback
 * (HttpTransport.withLoopbackServer), queued and taken through a throw-away
 * HostQueues, built and signed (buildRequest), sent through the whole transport
 * (HttpService, the undici adapter, undici), and its result made an outcome
 * (toRecordedOutcome); every 200 outcomes go to `writeBack`, which runs the
 * write-back statement on them: their callback ids are new, so it matches and
 * inserts nothing (CompleterService.warmUpWriteBack). No callback row, metric or
 * host limit is touched.
 *
 * A worker started on a backlog otherwise ran its first ~20,000 callbacks on cold
 * code, with V8 compiling the hot functions on its helper threads meanwhile
 * (bench/README.md, "allocations, the attempt foreign key, JIT warm-up").
 */
export async function warmUpSendPath(
  transport: HttpTransport,
  config: AppConfig,
  rows: QueuedCallback[],
  writeBack: (outcomes: Array<RecordedOutcome & { batchId: string }>) => Promise<void>,
): Promise<void> {
  if (rows.length === 0) return;
  await transport.withLoopbackServer(async (url, send) => {
    const host = new URL(url).origin;
    const queues = new HostQueues<QueuedCallback>(() => WARM_UP_WINDOW);
    for (const row of rows) {
      row.url = url;
      row.host = host;
      queues.push(row);
    }
    const outcomes: Array<RecordedOutcome & { batchId: string }> = [];
    const writes: Array<Promise<void>> = [];
    const lane = async () => {
      for (let row = queues.take(); row; row = queues.take()) {
        const result = await send(buildRequest(row, row.secrets, config.httpTimeoutMs));
        queues.done(row.host);
        outcomes.push(toRecordedOutcome(row, result, config));
        // The database may be away at boot: the worker's loops retry and say so.
        if (outcomes.length >= WARM_UP_WRITE_BACK) writes.push(writeBack(outcomes.splice(0)).catch(() => undefined));
      }
    };
    await Promise.all(Array.from({ length: Math.min(WARM_UP_WINDOW, rows.length) }, lane));
    await Promise.all(writes);
  });
}
