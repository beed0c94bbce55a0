import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BLOCKED_CODE } from '../outcome.policy.js';
import { buildGuardedConnector } from './connector.js';
import { NetworkPolicy } from '../../common/network.policy.js';

/**
 * The connector refuses before a socket exists: a raw TCP server on loopback counts
 * connections (not HTTP requests), so even a connect without a request would show.
 */
describe(buildGuardedConnector.name, () => {
  let server: Server;
  let port: number;
  let connections = 0;

  beforeAll(async () => {
    server = createServer((s) => {
      connections++;
      s.destroy();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  function connect(policy: NetworkPolicy, hostname: string): Promise<{ error?: Error & { code?: string }; socket?: Socket }> {
    const connector = buildGuardedConnector(policy, 2_000);
    return new Promise((resolve) =>
      connector({ hostname, protocol: 'http:', port: String(port) }, (error, socket) => resolve(error ? { error } : { socket: socket as Socket })),
    );
  }

  it.each(['127.0.0.1', 'localhost', '[::ffff:7f00:1]', '[::1]'])('should refuse %s without opening a connection', async (hostname) => {
    const before = connections;
    const { error, socket } = await connect(new NetworkPolicy(), hostname);
    expect(socket).toBeUndefined();
    expect(error?.code).toBe(BLOCKED_CODE);
    expect(error?.message).toMatch(/private or reserved range/);
    await new Promise((r) => setTimeout(r, 50));
    expect(connections).toBe(before);
  });

  it('should connect when ALLOW_PRIVATE_NETWORKS opens the address (the counter above works)', async () => {
    const before = connections;
    const { error, socket } = await connect(new NetworkPolicy(['127.0.0.1/32']), 'localhost');
    expect(error).toBeUndefined();
    socket?.destroy();
    await new Promise((r) => setTimeout(r, 50));
    expect(connections).toBe(before + 1);
  });
});
