import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpTransport } from '../../src/dispatch/transport/http.transport.js';
import { TestCertificates, type CertificateFiles } from '../support/certificates.js';
import { spawnService, type ServiceProcess } from '../support/process.js';
import { createTestDatabase } from '../support/database.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';
import { checkedFetch } from '../support/openapi-validator.js';

type Phases = { dnsMs: number | null; connectMs: number | null; tlsMs: number | null; firstByteMs: number | null };
type Attempt = { durationMs: number; statusCode: number | null; outcome: string; phases: Phases };

async function sendOne(api: (p: string, i?: RequestInit & { json?: unknown }) => Promise<Response>, url: string): Promise<Attempt> {
  const res = await api('/v1/batches', { method: 'POST', json: { callbacks: [{ url, maxAttempts: 1 }] } });
  expect(res.status).toBe(202);
  const batch = (await res.json()) as { id: string; callbacks: Array<{ id: string }> };
  return waitFor(async () => {
    const cb = (await (await api(`/v1/callbacks/${batch.callbacks[0].id}`)).json()) as { attempts: Attempt[] };
    return cb.attempts[0];
  }, 10_000);
}

describe(`${HttpTransport.name} phase timings`, () => {
  let service: TestService;
  let receiver: Receiver;

  beforeAll(async () => {
    service = await startTestService();
    receiver = await Receiver.start();
    await receiver.warmUp();
  });
  afterAll(async () => {
    await service?.dispose();
    await receiver?.close();
  });

  it('should time DNS and connect on a new connection to a hostname, and reuse it with zero phases', async () => {
    const port = new URL(receiver.url).port;
    const first = await sendOne(service.api, `http://localhost:${port}/first`);
    expect(first.outcome).toBe('success');
    expect(first.phases.dnsMs).toBeGreaterThan(0);
    expect(first.phases.connectMs).toBeGreaterThan(0);
    expect(first.phases.tlsMs).toBeNull();
    expect(first.phases.firstByteMs).toBeGreaterThanOrEqual(first.phases.dnsMs! + first.phases.connectMs!);
    expect(first.durationMs).toBeGreaterThanOrEqual(first.phases.firstByteMs!);

    const again = await sendOne(service.api, `http://localhost:${port}/again`);
    expect(again.phases).toMatchObject({ dnsMs: 0, connectMs: 0, tlsMs: null });
  });

  it('should time no DNS for an IP address, only the connect', async () => {
    const other = await Receiver.start({ host: '127.0.0.2' });
    try {
      const a = await sendOne(service.api, `${other.url}/ip`);
      expect(a.phases.dnsMs).toBe(0);
      expect(a.phases.connectMs).toBeGreaterThan(0);
    } finally {
      await other.close();
    }
  });

  it('should put the time to first byte at the receiver sleep', async () => {
    const a = await sendOne(service.api, `${receiver.url}/slow?sleep=300`);
    // At the sleep, and not a second sleep's worth past it: the slack is for a loaded
    // machine's event loops (the receiver's and the service's; 274 ms for a 200 ms sleep once
    // with other files beside it).
    expect(a.phases.firstByteMs).toBeGreaterThanOrEqual(300);
    expect(a.phases.firstByteMs).toBeLessThan(500);
    // the answer's headers and its body come in one write: the rest of the call is the body's read
    expect(a.durationMs - a.phases.firstByteMs!).toBeLessThan(100);
  });
});

/**
 * TLS needs a certificate the service trusts: a self-signed one made with the
 * openssl CLI, trusted through Node's NODE_EXTRA_CA_CERTS, which Node reads at
 * start, so the service runs as its own process here (the built dist/main.js).
 */
describe(`${HttpTransport.name} TLS phase`, () => {
  const KEY = 'cbk_phases_tls_test_key_0123456789';
  let certificates: TestCertificates | undefined;
  let tls: CertificateFiles;
  let server: https.Server;
  let proc: ServiceProcess;
  let url = '';
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const api = (p: string, init: RequestInit & { json?: unknown } = {}) =>
    checkedFetch(url, `${url}${p}`, {
      ...init,
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
    });

  beforeAll(async () => {
    certificates = new TestCertificates();
    tls = certificates.selfSigned('localhost', 'DNS:localhost,IP:127.0.0.1');
    server = https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
      const sleep = Number(new URL(req.url!, 'https://x').searchParams.get('sleep') ?? 0);
      req.resume();
      req.on('end', () => setTimeout(() => res.end('ok'), sleep));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    db = await createTestDatabase();
    proc = await spawnService({ DATABASE_URL: db.url, BOOTSTRAP_API_KEY: KEY, LOG_LEVEL: 'error', NODE_EXTRA_CA_CERTS: tls.certFile });
    url = proc.url;
  });
  afterAll(async () => {
    await proc?.stop();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await db?.drop();
    certificates?.remove();
  });

  it('should time the TLS handshake of a new https connection, and none on reuse', async () => {
    const { port } = server.address() as AddressInfo;
    const first = await sendOne(api, `https://localhost:${port}/tls?sleep=50`);
    expect(first.outcome).toBe('success');
    expect(first.phases.dnsMs).toBeGreaterThan(0);
    expect(first.phases.connectMs).toBeGreaterThan(0);
    expect(first.phases.tlsMs).toBeGreaterThan(0);
    expect(first.phases.firstByteMs).toBeGreaterThanOrEqual(50 + first.phases.tlsMs!);
    const again = await sendOne(api, `https://localhost:${port}/tls-again`);
    expect(again.outcome).toBe('success');
    expect(again.phases).toMatchObject({ dnsMs: 0, connectMs: 0 });
    expect(again.phases.tlsMs ?? 0).toBe(0);
  });

  it('should record an untrusted certificate as a tls_error', async () => {
    // 127.0.0.1 is in the certificate; 127.0.0.2 is not, so verification fails.
    const other = https.createServer({ key: tls.key, cert: tls.cert }, (_q, s) => s.end('ok'));
    await new Promise<void>((r) => other.listen(0, '127.0.0.2', r));
    try {
      const { port } = other.address() as AddressInfo;
      const a = await sendOne(api, `https://127.0.0.2:${port}/`);
      expect(a.outcome).toBe('tls_error');
      expect(a.statusCode).toBeNull();
    } finally {
      await new Promise((r) => other.close(r));
    }
  });
});
