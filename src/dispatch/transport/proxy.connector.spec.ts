import { createServer, type AddressInfo, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BLOCKED_CODE } from '../outcome.policy.js';
import { NetworkPolicy } from '../../common/network.policy.js';
import { buildProxiedConnector } from './proxy.connector.js';
import { parseEgressProxy } from './proxy.tunnel.js';

/**
 * The SSRF decision comes before the proxy: a raw TCP server stands in for the
 * proxy and counts connections, so even a connect without a CONNECT line would show.
 */
describe(buildProxiedConnector.name, () => {
  let proxy: Server;
  let port: number;
  let connections = 0;
  const lines: string[] = [];

  beforeAll(async () => {
    proxy = createServer((s) => {
      connections++;
      s.once('data', (d) => {
        lines.push(d.toString('latin1').split('\r\n')[0]);
        s.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      });
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    port = (proxy.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((r) => proxy.close(r));
  });

  function connect(policy: NetworkPolicy, hostname: string): Promise<Error & { code?: string }> {
    const connector = buildProxiedConnector(policy, parseEgressProxy(`http://127.0.0.1:${port}`), 2_000);
    return new Promise((resolve) =>
      connector({ hostname, protocol: 'http:', port: '8080' }, (error, socket) => {
        socket?.destroy();
        resolve(error ?? new Error('connected'));
      }),
    );
  }

  it.each(['localhost', '127.0.0.1', '[::1]', '169.254.169.254'])('should refuse %s without contacting the proxy', async (hostname) => {
    const before = connections;
    const error = await connect(new NetworkPolicy(), hostname);
    expect(error.code).toBe(BLOCKED_CODE);
    await new Promise((r) => setTimeout(r, 50));
    expect(connections).toBe(before);
  });

  it('should ask the proxy for the resolved address of an allowed name, not the name (the counter above works)', async () => {
    const before = connections;
    const error = await connect(new NetworkPolicy(['127.0.0.1/32']), 'localhost');
    expect(error.code).toBe('ERR_PROXY_TUNNEL');
    expect(error.message).toMatch(/proxy answered CONNECT 127\.0\.0\.1:8080 with 403/);
    expect(connections).toBe(before + 1);
    expect(lines.at(-1)).toBe('CONNECT 127.0.0.1:8080 HTTP/1.1');
  });

  it('should parse proxy credentials into Proxy-Authorization', () => {
    expect(parseEgressProxy('http://u%40x:p%3Ass@proxy.internal:3128')).toEqual({
      protocol: 'http:',
      hostname: 'proxy.internal',
      port: 3128,
      authorization: `Basic ${Buffer.from('u@x:p:ss').toString('base64')}`,
    });
    expect(parseEgressProxy('https://[::1]/')).toMatchObject({ hostname: '::1', port: 443, authorization: undefined });
    expect(() => parseEgressProxy('socks5://127.0.0.1:1080')).toThrow(/unsupported scheme/);
  });
});
