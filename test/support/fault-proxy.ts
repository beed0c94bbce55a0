import net from 'node:net';

/** What the proxy does with the bytes between the service and Postgres. */
export type FaultMode = { kind: 'pass' } | { kind: 'latency'; ms: number } | { kind: 'blackhole' } | { kind: 'reset' };

/**
 * A TCP proxy between a service and Postgres, on 127.0.0.x, forwarding only to the
 * target given (a loopback Postgres). Its mode can change at any time:
 * - `pass`: bytes go through as they come;
 * - `latency`: each chunk is held `ms` before it goes on (both ways);
 * - `blackhole`: connections stay open, and new ones are accepted, but nothing goes
 *   through either way (a cable cut, a firewall dropping packets): the kernel still
 *   acknowledges what is sent, so only timeouts can tell;
 * - `reset`: every open connection is reset (RST) and so is each new one, until
 *   the mode changes.
 */
export class FaultProxy {
  private mode: FaultMode = { kind: 'pass' };
  private readonly pairs = new Set<{ client: net.Socket; server: net.Socket }>();
  /** Connections reset so far. */
  resets = 0;

  private constructor(
    private readonly server: net.Server,
    readonly host: string,
    readonly port: number,
  ) {}

  static async start(target: { host: string; port: number }, host = '127.0.0.1'): Promise<FaultProxy> {
    if (!target.host.startsWith('127.') && target.host !== 'localhost') throw new Error(`the fault proxy forwards to loopback only, not ${target.host}`);
    const proxy: { it?: FaultProxy } = {};
    const server = net.createServer((client) => proxy.it!.accept(client, target));
    await new Promise<void>((resolve) => server.listen(0, host, resolve));
    proxy.it = new FaultProxy(server, host, (server.address() as net.AddressInfo).port);
    return proxy.it;
  }

  /** `url` (a postgresql:// URL) with its host and port replaced by the proxy's. */
  urlFor(url: string): string {
    const u = new URL(url);
    u.hostname = this.host;
    u.port = String(this.port);
    return u.toString();
  }

  set(mode: FaultMode): void {
    this.mode = mode;
    if (mode.kind === 'reset') for (const p of [...this.pairs]) this.reset(p);
  }

  async close(): Promise<void> {
    for (const p of [...this.pairs]) this.reset(p);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket, target: { host: string; port: number }): void {
    const server = net.connect(target.port, target.host);
    const pair = { client, server };
    this.pairs.add(pair);
    const forget = () => this.pairs.delete(pair);
    client.on('error', forget).on('close', () => (forget(), server.destroy()));
    server.on('error', forget).on('close', () => (forget(), client.destroy()));
    this.pipe(client, server);
    this.pipe(server, client);
    if (this.mode.kind === 'reset') this.reset(pair);
  }

  private pipe(from: net.Socket, to: net.Socket): void {
    from.on('data', (chunk) => {
      const mode = this.mode;
      if (mode.kind === 'blackhole' || mode.kind === 'reset') return; // dropped
      if (mode.kind === 'latency') setTimeout(() => to.destroyed || to.write(chunk), mode.ms);
      else to.write(chunk);
    });
  }

  private reset(p: { client: net.Socket; server: net.Socket }): void {
    this.resets++;
    this.pairs.delete(p);
    p.client.resetAndDestroy();
    p.server.resetAndDestroy();
  }
}
