import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { call, spawnService, type ServiceProcess } from '../support/process.js';
import { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/service.js';

/** Hostile runs in all: each a callback, one attempt, through a receiver's transform. */
const RUNS = 1_000;
/** Receivers with the hostile code (each its own compiled transform, its own sandbox memory). */
const RECEIVERS = 10;

/** What each run asks of the code (by its body), and how many of the runs do. Loops of heavy built-ins end their thread: a few. */
const KINDS: Array<[string, number]> = [
  ['loop', 200],
  ['objects', 150],
  ['huge-string', 150],
  ['deep', 100],
  ['require', 120],
  ['process', 120],
  ['fetch', 120],
  ['string-bomb', 20],
  ['heavy-builtins', 20],
];

const HOSTILE = `function handler(webhook) {
  const kind = webhook.body.kind;
  if (kind === 'loop') for (;;) {}
  if (kind === 'objects') { const a = []; for (;;) a.push({ i: a.length, s: 'x' + a.length }); }
  if (kind === 'huge-string') return { body: 'x'.repeat(5e7) };
  if (kind === 'deep') { const r = (n) => r(n + 1) + 1; return r(0); }
  if (kind === 'require') return require('child_process');
  if (kind === 'process') return process.env;
  if (kind === 'fetch') return fetch('http://127.0.0.1:9/');
  if (kind === 'string-bomb') { const a = []; for (;;) a.push('z'.repeat(1e5) + a.length); }
  if (kind === 'heavy-builtins') { const s = 'x'.repeat(1e6); for (;;) s.indexOf('y'); }
  return webhook;
}`;

/** Resident memory of a process (VmRSS), in MiB. */
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

describe('transform sandbox memory', () => {
  let db: TestDatabase;
  let service: ServiceProcess;
  let receiver: Receiver;

  beforeAll(async () => {
    [db, receiver] = await Promise.all([createTestDatabase(), Receiver.start()]);
    service = await spawnService({ DATABASE_URL: db.url, TRANSFORM_TIMEOUT_MS: '50', LOG_LEVEL: 'error' });
  });
  afterAll(async () => {
    await service?.stop();
    await db?.drop();
    await receiver?.close();
  });

  /** Sends `n` hostile callbacks (kinds in turn, receivers in turn) and waits until the batch is done. */
  async function hostileRuns(kinds: string[]): Promise<void> {
    const callbacks = kinds.map((kind, i) => ({ receiver: `hostile-${i % RECEIVERS}`, body: { kind }, maxAttempts: 1 }));
    const { status, body } = await call(service.url, '/v1/batches', { method: 'POST', json: { callbacks } });
    expect(status).toBe(202);
    await waitFor(async () => (await call(service.url, `/v1/batches/${body.id}`)).body.status === 'completed', 240_000, 500);
    const counts = (await call(service.url, `/v1/batches/${body.id}`)).body.counts;
    expect(counts).toMatchObject({ failed: kinds.length, succeeded: 0 });
  }

  it(`should stay within its bound after ${RUNS} hostile runs, and keep sending`, { timeout: 600_000 }, async () => {
    for (let i = 0; i < RECEIVERS; i++) {
      expect(
        (
          await call(service.url, `/v1/receivers/hostile-${i}`, {
            method: 'PUT',
            json: { url: `${receiver.url}/h${i}`, transform: { code: `${HOSTILE}\n// ${i}` } },
          })
        ).status,
      ).toBe(201);
    }
    const all = KINDS.flatMap(([kind, n]) => Array.from({ length: n }, () => kind));
    // interleaved, so every part of the run meets every kind
    const runs = all
      .map((kind, i) => ({ kind, order: (i * 7919) % all.length }))
      .sort((a, b) => a.order - b.order)
      .map((r) => r.kind);
    expect(runs).toHaveLength(RUNS);
    const pid = service.proc.pid!;
    const start = rssMb(pid);
    // the first fifth: threads made, every transform compiled, V8's heaps grown to their working size
    await hostileRuns(runs.slice(0, RUNS / 5));
    const warm = rssMb(pid);
    await hostileRuns(runs.slice(RUNS / 5));
    const end = rssMb(pid);
    console.log(`RSS: ${start.toFixed(0)} MiB at start, ${warm.toFixed(0)} after ${RUNS / 5} hostile runs, ${end.toFixed(0)} after ${RUNS}`);
    // No growth with the runs: a run leaves nothing behind (a failed transform's instance is dropped, an ended thread's memory freed).
    expect(end - warm).toBeLessThan(64);
    // The bound: one thread (an isolate of tens of MiB), each receiver's cached transform (what it touched of its 16 MiB), and one run's 16 MiB.
    expect(end - start).toBeLessThan(40 + RECEIVERS * 16 + 16);
    // and the service still sends
    const { body } = await call(service.url, '/v1/batches', { method: 'POST', json: { callbacks: [{ url: `${receiver.url}/after` }] } });
    await waitFor(async () => (await call(service.url, `/v1/batches/${body.id}`)).body.status === 'completed', 10_000);
    expect(receiver.requests.filter((r) => r.url === '/after')).toHaveLength(1);
    expect(receiver.requests.filter((r) => r.url.startsWith('/h'))).toEqual([]);
  });
});
