import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/support/wait.js';
import { loadConfig } from '../config/app.config.js';
import { errorView, linesOf, readOutput, sandboxInput, type SandboxError, type WebhookRequest } from './transform.policy.js';
import { TransformSandbox } from './transform.sandbox.js';

const config = loadConfig({}, { transformTimeoutMs: 50, transformMemoryMb: 16 });
const limits = { timeoutMs: 50, memoryMb: 16, maxBodyBytes: config.maxCallbackBodyBytes };
const request: WebhookRequest = {
  method: 'POST',
  url: 'https://shop.example/hooks',
  headers: { 'content-type': 'application/json', 'webhook-event-type': 'order.paid' },
  body: '{"order":42,"amount":1500}',
};
const context = { eventType: 'order.paid', receiver: 'merchant-42', attempt: 1 };

describe(TransformSandbox.name, () => {
  const sandbox = new TransformSandbox(config);
  let n = 0;
  afterAll(() => sandbox.onApplicationShutdown());

  /** Runs `code` as a new transform on the sample request: the result as users see it. */
  async function run(code: string, input: WebhookRequest = request) {
    const answer = await sandbox.run({ key: `k${n++}`, code, ...sandboxInput(input, context) });
    if (answer.error) return { kind: 'error' as const, error: errorView(answer.error, linesOf(code), limits), raw: answer.error };
    return readOutput(answer.text, input, limits);
  }

  it('should hand the handler the webhook with its body parsed, and send what it returns', async () => {
    const result = await run(`function handler(webhook) {
      webhook.headers['x-shape'] = webhook.receiver + '/' + webhook.eventType + '/' + webhook.attempt;
      webhook.body = { text: 'order ' + webhook.body.order + ' paid: ' + webhook.body.amount };
      return webhook;
    }`);
    expect(result).toEqual({
      kind: 'send',
      request: {
        method: 'POST',
        url: 'https://shop.example/hooks',
        headers: { 'webhook-event-type': 'order.paid', 'content-type': 'application/json', 'x-shape': 'merchant-42/order.paid/1' },
        body: '{"text":"order 42 paid: 1500"}',
      },
    });
  });

  it('should answer a cancel when the handler returns null', async () => {
    expect(await run('function handler(webhook) { return webhook.body.amount < 2000 ? null : webhook; }')).toEqual({ kind: 'cancel' });
  });

  it('should reuse a compiled transform, keeping no more than its code between calls it did not hurt', async () => {
    const code = 'let calls = 0; function handler(webhook) { webhook.headers["x-calls"] = String(++calls); return webhook; }';
    const runs = [];
    for (let i = 0; i < 3; i++) runs.push(await sandbox.run({ key: 'counted', code, ...sandboxInput(request, context) }));
    expect(runs.map((r) => (readOutput(r.text!, request, limits) as { request: WebhookRequest }).request.headers['x-calls'])).toEqual(['1', '2', '3']);
  });

  it.each([
    ['require', 'function handler(w) {\n  return require("fs");\n}', "ReferenceError: 'require' is not defined", 2],
    ['process', 'function handler(w) {\n  w.headers.x = process.env.HOME;\n  return w;\n}', "ReferenceError: 'process' is not defined", 2],
    ['fetch', 'function handler(w) { fetch("http://127.0.0.1:1/"); return w; }', "ReferenceError: 'fetch' is not defined", 1],
    ['timers', 'function handler(w) { setTimeout(() => 0, 1); return w; }', "ReferenceError: 'setTimeout' is not defined", 1],
    ['import', 'function handler(w) { return import("fs"); }', 'TypeError: handler returned a promise: it runs synchronously, with nothing to wait for', null],
  ])('should have no %s in the sandbox', async (_, code, message, line) => {
    const result = await run(code);
    expect(result.kind).toBe('error');
    if (result.kind !== 'error') return;
    if (message) expect(result.error.message).toBe(message);
    expect(result.error.line).toBe(line);
  });

  it('should name the line of a syntax error, and of an error thrown in the handler', async () => {
    expect(await run('function handler(w) {\n  return w +;\n}')).toMatchObject({
      kind: 'error',
      error: { message: expect.stringMatching(/^SyntaxError: /), line: 2 },
    });
    const thrown = await run('function handler(w) {\n  const x = 1;\n  return w.body.nope.deeper;\n}');
    expect(thrown).toMatchObject({ kind: 'error', error: { message: expect.stringMatching(/^TypeError: /), line: 3 } });
    expect(await run('const handle = 1;')).toMatchObject({
      kind: 'error',
      error: { message: 'TypeError: the code must define function handler(webhook)', line: null },
    });
  });

  it('should end an endless loop at its budget, and the transform runs again afterwards', async () => {
    const code = 'let n = 0; function handler(w) { if (w.body.loop) for (;;) n++; return w; }';
    const started = Date.now();
    const looped = await sandbox.run({ key: 'loops', code, ...sandboxInput({ ...request, body: '{"loop":true}' }, context) });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(looped.error).toMatchObject({ kind: 'timeout' });
    expect(errorView(looped.error as SandboxError, linesOf(code), limits).message).toBe('timed out after 50 ms');
    const after = await sandbox.run({ key: 'loops', code, ...sandboxInput(request, context) });
    expect(after.error).toBeUndefined();
  });

  it('should end a loop of heavy built-ins, which the engine seldom interrupts, by ending its thread', async () => {
    const before = sandbox.threadsEnded;
    const started = Date.now();
    const result = await run('function handler(w) { const s = "x".repeat(1e6); for (;;) s.indexOf("y"); }');
    expect(result).toMatchObject({ kind: 'error', error: { message: 'timed out after 50 ms' } });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(sandbox.threadsEnded).toBe(before + 1);
    // a new thread took over
    expect(await run('function handler(w) { return w; }')).toMatchObject({ kind: 'send' });
  });

  it('should have a spare thread take the place of one ended, so a transform queued behind a cut waits for no thread to start', async () => {
    const heavy = 'function handler(w) { const s = "x".repeat(1e6); for (;;) s.indexOf("y"); }';
    const input = sandboxInput(request, context);
    await sandbox.run({ key: 'heavy-a', code: heavy, ...input }); // a cut: the spare is made
    await sandbox.run({ key: 'warm', code: 'function handler(w) { return w; }', ...input });
    await waitFor(() => sandbox.spareReady, 10_000, 10);
    const cut = sandbox.run({ key: 'heavy-b', code: heavy, ...input });
    const queued = Date.now();
    const behind = await sandbox.run({ key: 'behind', code: 'function handler(w) { return w; }', ...input });
    const waited = Date.now() - queued;
    expect(behind.error).toBeUndefined();
    expect((await cut).error).toMatchObject({ kind: 'timeout' });
    // the cut itself (twice the 50 ms budget) and a compile; a thread's start takes 300 ms and more
    expect(waited).toBeLessThan(300);
  });

  it.each([
    ['many strings', 'function handler(w) { const a = []; for (;;) a.push("z".repeat(1e5) + a.length); }'],
    ['many objects', 'function handler(w) { const a = []; for (;;) a.push({ i: a.length, s: "abc" + a.length }); }'],
    ['one huge string', 'function handler(w) { return { body: "x".repeat(3e7) }; }'],
    ['a deep recursion', 'function handler(w) { function r(n) { return r(n + 1) + 1; } return r(0); }'],
  ])('should end a memory bomb (%s) as a bounded error', async (_, code) => {
    const started = Date.now();
    const result = await run(code);
    expect(result.kind).toBe('error');
    if (result.kind === 'error') expect(result.error.message).toMatch(/^(out of memory|timed out after 50 ms|stack overflow)/);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('should say a handler threw null when it did, and out of memory only when the memory was full', async () => {
    expect(await run('function handler(w) { throw null; }')).toMatchObject({ kind: 'error', error: { message: 'Error: null' } });
    // One call fills the memory, catches the failed allocation and returns (the instance is
    // kept); the next, on the same instance, throws null.
    const code =
      'let n = 0; function handler(w) { if (n++ > 0) throw null; try { w.headers.x = "z".repeat(12e6); } catch (e) { w.headers.x = e.message; } return w; }';
    const input = sandboxInput(request, context);
    const first = await sandbox.run({ key: 'full-then-null', code, ...input });
    expect(readOutput(first.text!, request, limits)).toMatchObject({ kind: 'send', request: { headers: { x: 'out of memory' } } });
    const second = await sandbox.run({ key: 'full-then-null', code, ...input });
    expect(second.error).toMatchObject({ kind: 'run', message: 'null' });
  });

  it('should refuse an answer larger than TRANSFORM_MAX_OUTPUT_BYTES', async () => {
    const result = await run('function handler(w) { w.body = "y".repeat(600000); return w; }');
    expect(result).toMatchObject({ kind: 'error', error: { message: 'RangeError: handler returned more than 524288 characters' } });
  });

  it("should run another transform's job within about a budget while one transform has a backlog of budget-long runs", async () => {
    const input = sandboxInput(request, context);
    const backlog = Array.from({ length: 20 }, () => sandbox.run({ key: 'backlog', code: 'function handler(w) { for (;;); }', ...input }));
    await waitFor(() => sandbox.running > 0, 5_000, 5); // its runs are under way
    const started = Date.now();
    const quick = await sandbox.run({ key: 'quick', code: 'function handler(w) { return w; }', ...input });
    expect(quick.error).toBeUndefined();
    // behind the whole backlog it would have waited 20 × 50 ms
    expect(Date.now() - started).toBeLessThan(500);
    expect((await Promise.all(backlog)).every((r) => r.error?.kind === 'timeout')).toBe(true);
  });

  it('should run other transforms while one loops', async () => {
    const looping = sandbox.run({ key: 'spin', code: 'function handler(w) { for (;;); }', ...sandboxInput(request, context) });
    const plain = await Promise.all(Array.from({ length: 20 }, (_, i) => run(`function handler(w) { w.headers['x-n'] = '${i}'; return w; }`)));
    expect(plain.map((r) => r.kind)).toEqual(Array(20).fill('send'));
    expect((await looping).error).toMatchObject({ kind: 'timeout' });
  });
});
