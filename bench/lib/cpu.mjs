// CPU time spent by the processes under test, read from /proc (Linux), and the
// service's garbage-collection pauses from its /metrics: what each call costs each
// of them, to see where the machine's cores go.
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_MS = 100 / 1000; // USER_HZ is 100 on Linux

/**
 * `pid`'s parent, its CPU ms (utime + stime) and that of its children it has reaped
 * (cutime + cstime); undefined once it has exited.
 */
function stat(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    const ticks = (i) => Number(fields[i]);
    return { ppid: ticks(1), ms: (ticks(11) + ticks(12)) / TICKS_PER_MS, reapedMs: (ticks(13) + ticks(14)) / TICKS_PER_MS };
  } catch {
    return undefined;
  }
}

/** CPU milliseconds used so far by process `pid` (all its threads). */
export function processCpuMs(pid) {
  return stat(pid)?.ms ?? Number.NaN;
}

/**
 * CPU milliseconds used so far by a Postgres server: its postmaster, every process
 * it forked that still runs (connections, WAL writer, checkpointer…), and those that
 * exited (autovacuum workers, closed connections), which the postmaster has reaped.
 * `backendPid` is any backend of that server (`SELECT pg_backend_pid()`).
 */
export function postgresCpuMs(backendPid) {
  const server = postgresPids(backendPid);
  const postmaster = server && stat(server.postmaster);
  if (!postmaster) return Number.NaN;
  return server.children.reduce((total, pid) => total + (stat(pid)?.ms ?? 0), postmaster.ms + postmaster.reapedMs);
}

/**
 * Nanoseconds on CPU so far of the Postgres server `backendPid` belongs to: its
 * postmaster and every process it forked that still runs, from /proc/<pid>/schedstat
 * (exact, where /proc/<pid>/stat counts 10 ms ticks). For the CPU of single
 * statements; processes that exited meanwhile are not counted.
 */
export function postgresRunNs(backendPid) {
  const server = postgresPids(backendPid);
  if (!server) return Number.NaN;
  const run = (pid) => {
    try {
      return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      return 0;
    }
  };
  return [server.postmaster, ...server.children].reduce((total, pid) => total + run(pid), 0);
}

/** The postmaster of `backendPid`'s server and the processes it forked that still run. */
function postgresPids(backendPid) {
  const postmaster = stat(backendPid)?.ppid;
  if (postmaster === undefined) return undefined;
  const children = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry) && stat(entry)?.ppid === postmaster);
  return { postmaster, children };
}

/**
 * Milliseconds the service at `url` has spent in garbage collection so far (all
 * kinds), from its own /metrics (prom-client's `nodejs_gc_duration_seconds`).
 */
export async function serviceGcMs(url) {
  const text = await (await fetch(`${url}/metrics`)).text();
  let seconds = 0;
  for (const m of text.matchAll(/^nodejs_gc_duration_seconds_sum\{[^}]*\} (\S+)$/gm)) seconds += Number(m[1]);
  return seconds * 1000;
}

/** Runs `fn` and returns its result with the ms each of `meters` (sync or async) counted meanwhile. */
export async function withCpu(meters, fn) {
  const read = async () => Object.fromEntries(await Promise.all(Object.entries(meters).map(async ([k, meter]) => [k, await meter()])));
  const before = await read();
  const result = await fn();
  const after = await read();
  const cpuMs = Object.fromEntries(Object.keys(meters).map((k) => [k, after[k] - before[k]]));
  return { result, cpuMs };
}

/** Busy CPU milliseconds of the whole machine so far, all cores (/proc/stat: everything but idle and iowait). */
export function machineBusyMs() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = fields;
  return (user + nice + system + irq + softirq + steal) / TICKS_PER_MS;
}
