// How bench:peer (and the benches built on its rounds) times a worker: a drain of
// stored rows from its first request, or the whole job from its first insert.
import { machineBusyMs, postgresCpuMs, processCpuMs } from './cpu.mjs';
import { waitUntil } from './harness.mjs';

/**
 * Reads the meters now: ms of CPU of `pid` (or of all of an array of pids), of Postgres,
 * of this process (`bench`: the receiver's thread, and the bench's own polling while it
 * waits), of the machine.
 */
function meters(pid, backendPid) {
  const worker = [pid].flat().reduce((total, p) => total + processCpuMs(p), 0);
  return { worker, postgres: postgresCpuMs(backendPid), bench: processCpuMs(process.pid), machine: machineBusyMs(), at: performance.now() };
}

/** calls/s and µs of CPU per call between two readings of the meters. */
function rates(start, end, n) {
  const perCall = (k) => ((end[k] - start[k]) * 1000) / n;
  return {
    perSecond: n / ((end.at - start.at) / 1000),
    worker: perCall('worker'),
    postgres: perCall('postgres'),
    bench: perCall('bench'),
    machine: perCall('machine'),
  };
}

/**
 * Waits for the first request of this drain, reads the meters, waits until `n` were
 * answered and `finished()` is true, reads them again. Returns calls/s and µs per call;
 * `pid` is the worker's, or an array of the workers' (their CPU is summed).
 */
export async function drain(receiver, n, pid, backendPid, finished) {
  const before = (await receiver.stats()).count;
  await receiver.waitForCount(before + 1, 60_000);
  const start = meters(pid, backendPid);
  await receiver.waitForCount(before + n, 120_000);
  await waitUntil(finished, 120_000, 10);
  return rates(start, meters(pid, backendPid), n);
}

/**
 * The whole job: reads the meters, runs `ingest()` (which stores the `n` jobs while the
 * worker, started and warm, already works them), waits until `n` requests were
 * answered and `finished()` is true (the last result stored), reads them again.
 * `pid`: the processes whose CPU is summed (e.g. the API's and the worker's).
 */
export async function wholeJob(receiver, n, pid, backendPid, ingest, finished) {
  const before = (await receiver.stats()).count;
  const start = meters(pid, backendPid);
  await ingest();
  await receiver.waitForCount(before + n, 120_000);
  await waitUntil(finished, 120_000, 10);
  return rates(start, meters(pid, backendPid), n);
}
