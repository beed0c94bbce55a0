import { Worker } from 'node:worker_threads';

/**
 * A benchmark receiver (bench/lib/receiver.worker.mjs) in a worker thread, listening
 * on one port per host. `record: true` keeps per-request timings for accuracy checks.
 */
export class BenchReceiver {
  #worker;
  #token = 0;
  #pending = new Map();
  ports = {};

  constructor(worker) {
    this.#worker = worker;
    worker.on('message', (m) => {
      const resolve = this.#pending.get(m.token);
      if (resolve) {
        this.#pending.delete(m.token);
        resolve(m);
      }
    });
  }

  static async start({ hosts = ['127.0.0.1'], record = false } = {}) {
    const worker = new Worker(new URL('./receiver.worker.mjs', import.meta.url), { workerData: { hosts, record } });
    const r = new BenchReceiver(worker);
    r.ports = await new Promise((resolve, reject) => {
      worker.once('error', reject);
      const onMessage = (m) => {
        if (m.type !== 'listening') return;
        worker.off('message', onMessage);
        resolve(m.ports);
      };
      worker.on('message', onMessage);
    });
    return r;
  }

  /** Base URL on `host` (default: the first host). */
  url(host = Object.keys(this.ports)[0]) {
    return `http://${host}:${this.ports[host]}`;
  }

  get urls() {
    return Object.keys(this.ports).map((h) => this.url(h));
  }

  #ask(message) {
    const token = ++this.#token;
    return new Promise((resolve) => {
      this.#pending.set(token, resolve);
      this.#worker.postMessage({ ...message, token });
    });
  }

  stats() {
    return this.#ask({ type: 'stats' });
  }

  /** Hands over (and forgets) the recorded requests: ids, arrival epoch ms, held ms. */
  records() {
    return this.#ask({ type: 'records' });
  }

  reset() {
    return this.#ask({ type: 'reset' });
  }

  /** Resolves when `target` requests were answered in all, or rejects after `timeoutMs`. */
  async waitForCount(target, timeoutMs) {
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`receiver saw fewer than ${target} requests within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      return await Promise.race([this.#ask({ type: 'watch', target }), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  close() {
    return this.#worker.terminate();
  }
}
