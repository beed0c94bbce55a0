import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Worker } from 'node:worker_threads';

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  /** Names and values as they came, in order (`headers` joins or drops repeated names). */
  rawHeaders: string[];
  body: string;
  /** Epoch ms (sub-ms precision) when the request arrived and when its handler began (after any queue). */
  arrivedAt: number;
  startedAt: number;
  /** How long the receiver held the request, by its own clock. */
  handledMs?: number;
}

export interface ReceiverOptions {
  host?: string;
  /** Like php-fpm's pm.max_children: at most this many handled at once; the rest wait in the receiver. */
  maxConcurrent?: number;
}

/**
 * A real HTTP receiver on 127.0.0.x, in its own thread (see receiver.worker.mjs
 * for the behaviours its query string selects). Requests are recorded once
 * answered (or their connection closed).
 */
export class Receiver {
  readonly requests: ReceivedRequest[] = [];
  /** Most requests ever waiting in the receiver's own queue, and most handled at once. */
  maxQueued = 0;
  maxActive = 0;
  /** Requests being handled now (arrived, not yet answered). */
  active = 0;
  url = '';
  private port = 0;
  private readonly listeners = new Set<(m: { type: string; port?: number }) => void>();

  private constructor(
    private readonly worker: Worker,
    private readonly host: string,
  ) {
    worker.on('message', (m) => {
      if (m.type === 'request') {
        this.requests.push(m.record);
        this.active = m.active;
      } else if (m.type === 'queued') this.maxQueued = Math.max(this.maxQueued, m.depth);
      else if (m.type === 'active') {
        this.active = m.active;
        this.maxActive = Math.max(this.maxActive, m.active);
      }
      for (const l of this.listeners) l(m);
    });
  }

  static async start(options: ReceiverOptions = {}): Promise<Receiver> {
    const host = options.host ?? '127.0.0.1';
    const worker = new Worker(new URL('./receiver.worker.mjs', import.meta.url), {
      workerData: { host, maxConcurrent: options.maxConcurrent ?? Infinity },
    });
    const r = new Receiver(worker, host);
    const { port } = await r.next('listening');
    r.port = port!;
    r.url = `http://${host}:${port}`;
    return r;
  }

  private next(type: string): Promise<{ type: string; port?: number }> {
    return new Promise((resolve) => {
      const l = (m: { type: string; port?: number }) => {
        if (m.type !== type) return;
        this.listeners.delete(l);
        resolve(m);
      };
      this.listeners.add(l);
    });
  }

  /** Stops listening (connections refused) until `up()`. */
  async down(): Promise<void> {
    this.worker.postMessage({ type: 'down' });
    await this.next('down');
  }

  async up(): Promise<void> {
    this.worker.postMessage({ type: 'up', port: this.port });
    await this.next('listening');
  }

  /**
   * Sends the receiver a few requests itself: a receiver in production is warm, and
   * its own first-request JIT is not the service's latency. Leaves them recorded.
   */
  async warmUp(requests = 20): Promise<void> {
    for (let i = 0; i < requests; i++) await (await fetch(`${this.url}/warm`, { method: 'POST', body: 'x' })).text();
  }

  /** Requests whose webhook-id is `id`. */
  byId(id: string): ReceivedRequest[] {
    return this.requests.filter((r) => r.headers['webhook-id'] === id);
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}

/** A port on 127.0.0.1 with nothing listening (bound, then closed). */
export async function closedPort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
