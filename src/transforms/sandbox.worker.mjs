// The transform sandbox's thread (started by transform.sandbox.ts): receivers' transform
// code runs here, in QuickJS compiled to WebAssembly, never in the service's own
// JavaScript engine. A plain ES module, not compiled: the sources (tests) and dist/ run
// the same file, which scripts/build.mjs copies beside the compiled transform.sandbox.js.
//
// What the code can reach: the language and its built-ins (JSON, Math, Date, RegExp, …).
// Nothing else exists in a QuickJS context made here: no require, no import (no module
// loader is set), no process, no fetch, no timers, no host function of ours.
//
// Each transform (its key: receiver id and a hash of its code) gets a WebAssembly
// instance of its own, with its own linear memory of at most `memoryBytes`: a transform
// that allocates past it fails with "out of memory" and takes no memory of another. That
// maximum is the ceiling that holds: QuickJS's own setMemoryLimit is set too, but in this
// build it cannot see the sizes malloc hands out, so it refuses single huge allocations
// only. The instance, its runtime, its context and the handler compiled in it are kept
// for the next call (least recently used first out, past `cacheSize`), and dropped after
// a call that ran out of time or memory, broke out of the engine, or grew the memory past
// INITIAL_BYTES, so a cached transform keeps at most that much resident.
//
// Time: each call's budget is checked by QuickJS's interrupt handler, which the engine
// polls every few thousand operations. A loop of heavy built-ins (`'x'.repeat(1e7)`)
// polls seldom, so the main thread also watches: `status` holds the start of the call
// under way, and a call still running at twice its budget ends the whole thread
// (TransformSandbox, transform.sandbox.ts).
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import variant from '@jitl/quickjs-wasmfile-release-sync';
import { newQuickJSWASMModuleFromVariant, newVariant } from 'quickjs-emscripten-core';

const { wasmModule, memoryBytes, cacheSize, maxOutputChars, status } = workerData;
/** status[0]: epoch ms at which the call under way started (0: none); status[1]: its budget; status[2]: its job's id. */
const running = new BigInt64Array(status);
const PAGE = 65536;
/** The engine's linear memory needs at least this much (the binary's own minimum). */
const INITIAL_BYTES = 16 * 1024 * 1024;
/** QuickJS's stack limit, below what its WebAssembly frames use of the thread's own stack (see a deep recursion fail cleanly in the spec). */
const MAX_STACK_BYTES = 256 * 1024;
/** A compile (an instance made, the code evaluated) may take this much more than a call's budget: making an instance takes milliseconds. */
const COMPILE_ALLOWANCE_MS = 500;
/** The name QuickJS gives the code in stack traces; the main thread reads lines of it. */
const FILE = 'transform.js';

/**
 * Appended to the receiver's code: calls its `handler` with the webhook, the body parsed
 * when `json` says it is JSON (kept a string when it does not parse), and answers null
 * (send nothing) or one string: the webhook's other fields as JSON with what its body is
 * (keep: left out; none: null; text; json), a newline, and the body as text (JSON when
 * it is not a string). JSON.stringify escapes every newline
 * inside a string, so the first newline is the split.
 */
const TRAILER = `
;(function () {
  'use strict';
  if (typeof handler !== 'function') throw new TypeError('the code must define function handler(webhook)');
  const h = handler, parse = JSON.parse, stringify = JSON.stringify, limit = ${Number(maxOutputChars)};
  return function (envelope, body, json) {
    const w = parse(envelope);
    if (body !== null && json) { try { body = parse(body); } catch (_) { /* not JSON after all: the text */ } }
    w.body = body;
    const out = h(w);
    if (out === null) return null;
    if (typeof out !== 'object' || Array.isArray(out)) throw new TypeError('handler must return the webhook (an object) or null, not ' + (out === undefined ? 'undefined' : typeof out));
    if (typeof out.then === 'function') throw new TypeError('handler returned a promise: it runs synchronously, with nothing to wait for');
    const b = out.body;
    const text = b === undefined || b === null ? '' : typeof b === 'string' ? b : stringify(b);
    if (typeof text !== 'string') throw new TypeError('webhook.body must be a string, a JSON value or null');
    const kind = b === undefined ? 'keep' : b === null ? 'none' : typeof b === 'string' ? 'text' : 'json';
    const meta = stringify({ method: out.method, url: out.url, headers: out.headers, body: kind });
    if (text.length + meta.length > limit) throw new RangeError('handler returned more than ' + limit + ' characters');
    return meta + '\\n' + text;
  };
})()`;

/**
 * The thread runs at a lower CPU priority than the rest of the process (nice 10, on
 * Linux, where a thread is a task of its own: /proc/thread-self names it), so on a
 * machine whose cores are all busy the sending, claiming and writing back go first and
 * a transform that spins takes what they leave. Elsewhere it runs at the process's.
 */
const NICE = 10;
try {
  setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), NICE);
} catch {
  // not Linux, or not allowed: the process's own priority
}

const compiledModule = wasmModule;
/** key → { module, memory, state, runtime, context, fn, deadline } */
const cache = new Map();

async function instantiate() {
  const memory = new WebAssembly.Memory({ initial: INITIAL_BYTES / PAGE, maximum: Math.max(INITIAL_BYTES, memoryBytes) / PAGE });
  // malloc grows this memory when it has no room left; `full` says the last grow was refused
  // (the memory is at its maximum), which is when an allocation fails.
  const grow = memory.grow.bind(memory);
  const state = { full: false };
  memory.grow = (pages) => {
    try {
      const before = grow(pages);
      state.full = false;
      return before;
    } catch (e) {
      state.full = true;
      throw e;
    }
  };
  const module = await newQuickJSWASMModuleFromVariant(newVariant(variant, { wasmModule: compiledModule, wasmMemory: memory }));
  return { module, memory, state };
}

/** Compiles `code` in a fresh instance; answers the entry or throws { error } with what QuickJS said. */
async function compile(key, code) {
  const { module, memory, state } = await instantiate();
  const runtime = module.newRuntime();
  runtime.setMemoryLimit(memoryBytes);
  runtime.setMaxStackSize(MAX_STACK_BYTES);
  const entry = { module, memory, state, runtime, context: runtime.newContext(), fn: undefined, deadline: 0 };
  runtime.setInterruptHandler(() => Date.now() > entry.deadline);
  entry.deadline = Date.now() + Number(running[1]);
  try {
    const r = entry.context.evalCode(code + TRAILER, FILE);
    if (r.error) throw { error: describe(entry, r.error, 'compile') };
    entry.fn = r.value;
  } catch (thrown) {
    drop(entry);
    throw 'error' in Object(thrown) ? thrown : { error: engineFailure(thrown) };
  }
  return entry;
}

/** What a QuickJS error handle says, as plain data (and the handle freed). */
function describe(entry, handle, phase) {
  let e;
  try {
    e = entry.context.dump(handle);
  } finally {
    handle.dispose();
  }
  // QuickJS throws null for an allocation that failed when it cannot allocate the error
  // itself either: a null thrown while the memory is full is running out of memory.
  if (e === null && entry.state.full) e = { name: 'InternalError', message: 'out of memory' };
  const message = typeof e === 'object' && e !== null ? String(e.message ?? e) : String(e);
  const name = typeof e === 'object' && e !== null ? String(e.name ?? 'Error') : 'Error';
  const kind = message === 'interrupted' ? 'timeout' : message === 'out of memory' ? 'memory' : phase;
  return { kind, name, message, stack: typeof e === 'object' && e !== null && typeof e.stack === 'string' ? e.stack : '' };
}

/** A failure of the engine itself (its WebAssembly stack overflowed, say): the instance is not used again. */
function engineFailure(thrown) {
  const message = thrown instanceof Error ? thrown.message : String(thrown);
  const overflow = thrown instanceof RangeError || /call stack/i.test(message);
  return { kind: overflow ? 'stack' : 'engine', name: overflow ? 'RangeError' : 'InternalError', message: overflow ? 'stack overflow' : message, stack: '' };
}

function drop(entry) {
  try {
    entry.fn?.dispose();
    entry.context.dispose();
    entry.runtime.dispose();
  } catch {
    // an instance that broke may not free cleanly; its memory goes with it either way
  }
}

function evict(key) {
  const entry = cache.get(key);
  if (!entry) return;
  cache.delete(key);
  drop(entry);
}

async function entryFor(job) {
  const hit = cache.get(job.key);
  if (hit) {
    cache.delete(job.key); // re-inserted below: the Map's order is the LRU order
    cache.set(job.key, hit);
    return hit;
  }
  const entry = await compile(job.key, job.code);
  cache.set(job.key, entry);
  while (cache.size > cacheSize) evict(cache.keys().next().value);
  return entry;
}

/** Runs one job; answers { id, text } (text null: send nothing), or { id, error }. */
async function run(job) {
  let entry;
  try {
    if (!cache.has(job.key)) watch(job, job.budgetMs + COMPILE_ALLOWANCE_MS);
    entry = await entryFor(job);
    if (job.compileOnly) return { id: job.id, text: null };
    const { context, fn } = entry;
    watch(job, job.budgetMs);
    entry.deadline = Date.now() + job.budgetMs;
    entry.state.full = false;
    const args = [context.newString(job.envelope), job.body === null ? context.null : context.newString(job.body), job.json ? context.true : context.false];
    let r;
    try {
      r = context.callFunction(fn, context.undefined, args);
    } finally {
      args[0].dispose();
      if (job.body !== null) args[1].dispose();
    }
    if (r.error) {
      const error = describe(entry, r.error, 'run');
      if (error.kind !== 'run') evict(job.key);
      return { id: job.id, error };
    }
    const text = context.typeof(r.value) === 'string' ? context.getString(r.value) : null;
    r.value.dispose();
    if (entry.memory.buffer.byteLength > INITIAL_BYTES) evict(job.key);
    return { id: job.id, text };
  } catch (thrown) {
    if (entry) evict(job.key);
    if ('error' in Object(thrown)) return { id: job.id, error: thrown.error };
    return { id: job.id, error: engineFailure(thrown) };
  } finally {
    running[0] = 0n;
  }
}

/** Messages are handled one after the other: a compile awaits its instance, and nothing else runs meanwhile. */
let turn = Promise.resolve();
/** Tells the main thread's watchdog that a step of `job` with this budget starts now. */
function watch(job, budgetMs) {
  running[0] = 0n;
  running[2] = BigInt(job.id);
  running[1] = BigInt(budgetMs);
  running[0] = BigInt(Date.now());
}

parentPort.on('message', (message) => {
  turn = turn.then(async () => {
    if (message.drop) for (const key of message.drop) evict(key);
    if (!message.jobs) return;
    const results = [];
    for (const job of message.jobs) {
      const started = performance.now();
      const result = await run(job);
      results.push({ ...result, ms: performance.now() - started });
    }
    parentPort.postMessage({ results });
  });
});
// The engine's modules are loaded and one instance made before the thread says it is ready, so a first transform's compile is not also the thread's start.
watch({ id: 0 }, COMPILE_ALLOWANCE_MS);
drop(await compile('', 'function handler(w) { return w; }'));
running[0] = 0n;
parentPort.postMessage({ ready: true });
