import { connect as tcpConnect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.js';

/**
 * A stop with HTTP connections that would never end by themselves
 * (src/common/stop.connections.ts). Without the cuts, the HTTP server's close waited
 * for them and the stop never finished (in production: until the 20 s shutdown limit,
 * then exit code 1).
 */
describe('stopping with HTTP connections open', () => {
  let service: TestService | undefined;
  const sockets: Socket[] = [];

  afterEach(async () => {
    sockets.splice(0).forEach((s) => s.destroy());
    await service?.dispose();
    service = undefined;
  });

  /** A raw connection to the service, open once this resolves. */
  async function open(url: string): Promise<Socket> {
    const socket = tcpConnect(Number(new URL(url).port), '127.0.0.1');
    sockets.push(socket);
    await new Promise((resolve) => socket.once('connect', resolve));
    return socket;
  }

  /** Stops the service; resolves with how long it took, in ms. */
  async function timedClose(s: TestService): Promise<number> {
    const started = Date.now();
    await s.close();
    return Date.now() - started;
  }

  it('should cut a connection that never sent a request at once, not wait for it', async () => {
    // A grace period far longer than the stop may take: the cut must not wait for it.
    service = await startTestService({ role: 'api', shutdownGraceMs: 60_000 });
    const idle = await open(service.url);
    const closed = new Promise((resolve) => idle.once('close', resolve));
    expect(await timedClose(service)).toBeLessThan(2_000);
    await closed;
  }, 15_000);

  it('should answer requests, and cut one that never ends at the grace period', async () => {
    const GRACE_MS = 700;
    service = await startTestService({ role: 'api', shutdownGraceMs: GRACE_MS });
    // Headers that never end: a request Node counts as in flight.
    const stuck = await open(service.url);
    stuck.write('GET /health/live HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: ');
    // A regular keep-alive client beside it: answered, then its idle connection goes.
    expect((await service.api('/health/live')).status).toBe(200);
    const took = await timedClose(service);
    expect(took).toBeGreaterThanOrEqual(GRACE_MS - 50);
    expect(took).toBeLessThan(GRACE_MS + 3_000);
  }, 15_000);
});
