import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthorizedSender } from '../../src/dispatch/auth/authorized.sender.js';
import { TestCertificates, type CertificateFiles } from '../support/certificates.js';
import { Receiver } from '../support/receiver.js';
import { jsonOf, startTestService, waitFor, type TestService } from '../support/service.js';

/** A TLS server on 127.0.0.x that asks every client for a certificate signed by `clientCa` and records whose each request came with. */
async function mutualTlsServer(host: string, server: CertificateFiles, clientCa: CertificateFiles) {
  const seen: Array<{ url: string; client: string | null; authorization?: string }> = [];
  const s = https.createServer({ cert: server.cert, key: server.key, ca: clientCa.cert, requestCert: true, rejectUnauthorized: true }, (req, res) => {
    const peer = (req.socket as TLSSocket).getPeerCertificate();
    seen.push({ url: req.url ?? '', client: (peer?.subject?.CN as string | undefined) ?? null, authorization: req.headers.authorization });
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  const refused: string[] = [];
  s.on('tlsClientError', (e) => refused.push((e as NodeJS.ErrnoException).code ?? e.message));
  await new Promise<void>((r) => s.listen(0, host, r));
  return { url: `https://${host}:${(s.address() as AddressInfo).port}`, seen, refused, close: () => new Promise((r) => s.close(r)) };
}

/** Receiver authentication (issue 55): basic and bearer as sent, mutual TLS per receiver, secrets write-only. */
describe(AuthorizedSender.name, () => {
  let service: TestService;
  let receiver: Receiver;
  const certs = new TestCertificates();
  let ca: CertificateFiles;
  let otherCa: CertificateFiles;
  /** Client certificates, made once (an RSA key each is most of a certificate's cost): a and b by `ca`, c by `otherCa`. */
  let clientA: CertificateFiles;
  let clientB: CertificateFiles;
  let clientC: CertificateFiles;
  let tlsServer: Awaited<ReturnType<typeof mutualTlsServer>>;

  beforeAll(async () => {
    service = await startTestService();
    receiver = await Receiver.start({ host: '127.0.0.81' });
    ca = certs.authority('test-ca');
    otherCa = certs.authority('other-ca');
    tlsServer = await mutualTlsServer('127.0.0.82', certs.signed(ca, 'server', { subjectAltName: 'IP:127.0.0.82' }), ca);
    clientA = certs.signed(ca, 'client-a', { clientAuth: true });
    clientB = certs.signed(ca, 'client-b', { clientAuth: true });
    clientC = certs.signed(otherCa, 'client-c', { clientAuth: true });
  });
  afterAll(async () => {
    await service?.dispose();
    await receiver?.close();
    await tlsServer?.close();
    certs.remove();
  });

  const put = (name: string, body: unknown) => service.api(`/v1/receivers/${name}`, { method: 'PUT', json: body });

  /** Sends one callback to the receiver and answers it once finished. */
  async function deliver(name: string): Promise<{ id: string; status: string; attempts: Array<Record<string, unknown>> }> {
    const res = await service.apiJson('/v1/batches', { method: 'POST', json: { callbacks: [{ receiver: name, body: { n: 1 }, maxAttempts: 1 }] } });
    const id = res.callbacks[0].id as string;
    return waitFor(async () => {
      const c = await service.apiJson(`/v1/callbacks/${id}`);
      return c.status === 'succeeded' || c.status === 'failed' ? c : undefined;
    });
  }

  it('should send basic and bearer auth as given, over a stored Authorization header, and show neither secret', async () => {
    const password = 'pa:ss wörd-Ω'.replace('ö', 'o').replace('Ω', 'W'); // printable ASCII, a colon inside
    let res = await put('basic-1', {
      url: `${receiver.url}/basic`,
      headers: { Authorization: 'Bearer stale-static-header' },
      auth: { type: 'basic', username: 'merchant-42', password },
    });
    expect(res.status).toBe(201);
    const created = await jsonOf(res);
    expect(created.auth).toEqual({ type: 'basic', username: 'merchant-42', password: 'set' });
    expect(JSON.stringify(created)).not.toContain(password);
    const token = 'bearer-token-0123456789';
    res = await put('bearer-1', { url: `${receiver.url}/bearer`, auth: { type: 'bearer', token } });
    expect((await jsonOf(res)).auth).toEqual({ type: 'bearer', token: 'set' });

    const basic = await deliver('basic-1');
    const bearer = await deliver('bearer-1');
    expect([basic.status, bearer.status]).toEqual(['succeeded', 'succeeded']);
    const [got] = receiver.byId(basic.id);
    expect(got.headers.authorization).toBe(`Basic ${Buffer.from(`merchant-42:${password}`).toString('base64')}`);
    // one Authorization header, the receiver's auth: the stored header of the same name is replaced
    expect(got.rawHeaders.filter((h, i) => i % 2 === 0 && h.toLowerCase() === 'authorization')).toHaveLength(1);
    expect(receiver.byId(bearer.id)[0].headers.authorization).toBe(`Bearer ${token}`);
    // the attempt says which authentication went out, never the credential
    expect(basic.attempts[0]).toMatchObject({ auth: 'basic', outcome: 'success' });
    expect(bearer.attempts[0]).toMatchObject({ auth: 'bearer' });
    expect(JSON.stringify([basic, bearer])).not.toMatch(/pa:ss|bearer-token/);
    const detail = await service.apiJson('/v1/receivers/basic-1');
    expect(detail.auth).toEqual({ type: 'basic', username: 'merchant-42', password: 'set' });
    const list = JSON.stringify(await service.apiJson('/v1/receivers'));
    expect(list).not.toContain(password);
    expect(list).not.toContain(token);
  });

  it('should keep a secret left out on an update of the same type, start afresh on another type, and remove auth with null', async () => {
    await put('keep-1', { url: `${receiver.url}/keep`, auth: { type: 'basic', username: 'a', password: 'first-password' } });
    let res = await put('keep-1', { auth: { type: 'basic', username: 'b' } });
    expect(res.status).toBe(200);
    const kept = await deliver('keep-1');
    expect(receiver.byId(kept.id)[0].headers.authorization).toBe(`Basic ${Buffer.from('b:first-password').toString('base64')}`);
    // another type needs its own secret
    res = await put('keep-1', { auth: { type: 'bearer' } });
    expect(res.status).toBe(400);
    expect((await jsonOf(res)).message).toBe('auth.token is required');
    // null removes it; the next call goes without
    res = await put('keep-1', { auth: null });
    expect((await jsonOf(res)).auth).toBeNull();
    // the worker's copy lasts up to 5 s: a callback each half second meanwhile, not one after another
    const plain = await waitFor(
      async () => {
        const c = await deliver('keep-1');
        return receiver.byId(c.id)[0].headers.authorization === undefined ? c : undefined;
      },
      15_000,
      500,
    );
    expect(plain.attempts[0].auth).toBeNull();
  });

  it('should refuse credentials that cannot work, naming the field and never the value', async () => {
    const [client, other] = [clientA, clientB];
    const cases: Array<[unknown, unknown, RegExp]> = [
      [{ type: 'digest', username: 'u', password: 'p' }, undefined, /auth.type must be one of basic, bearer, oauth2/],
      [{ type: 'basic', username: 'a:b', password: 'secret-value-1' }, undefined, /auth.username must not contain ":"/],
      [{ type: 'bearer', token: 'secret\nvalue-2' }, undefined, /auth.token must be printable ASCII/],
      [{ type: 'oauth2', tokenUrl: 'ftp://x', clientId: 'c', clientSecret: 'secret-value-3' }, undefined, /auth.tokenUrl must use http or https/],
      [{ type: 'oauth2', tokenUrl: 'https://x/t', clientId: 'c', clientSecret: 'secret-value-4', extra: 1 }, undefined, /not extra/],
      [undefined, { clientCertificate: client.cert }, /go together/],
      [undefined, { clientCertificate: client.cert, clientKey: other.key }, /not the key of tls.clientCertificate/],
      [undefined, { clientCertificate: client.cert, clientKey: 'not a key' }, /tls.clientKey must be PEM/],
      [undefined, { ca: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----' }, /tls.ca holds a certificate that does not parse/],
    ];
    for (const [auth, tls, message] of cases) {
      const res = await put('refused-1', { url: `${receiver.url}/x`, ...(auth !== undefined && { auth }), ...(tls !== undefined && { tls }) });
      const body = await jsonOf(res);
      expect({ status: res.status, message: body.message }).toEqual({ status: 400, message: expect.stringMatching(message) });
      expect(JSON.stringify(body)).not.toMatch(/secret-value|secret\\nvalue|PRIVATE KEY/);
    }
    // refused whole: the receiver was not made without its credentials
    expect((await service.api('/v1/receivers/refused-1')).status).toBe(404);
  });

  it("should deliver with the receiver's client certificate, and be refused without it or when the server does not chain to its CA", async () => {
    const [a, b, stranger] = [clientA, clientB, clientC];
    const url = `${tlsServer.url}/mtls`;
    const made = await jsonOf(await put('mtls-a', { url, tls: { clientCertificate: a.cert, clientKey: a.key, ca: ca.cert } }));
    expect(made.tls).toMatchObject({ clientCertificate: { subject: 'CN=client-a', issuer: 'CN=test-ca' }, clientKey: 'set', ca: [{ subject: 'CN=test-ca' }] });
    expect(JSON.stringify(made)).not.toContain('PRIVATE KEY');
    await put('mtls-b', { url, auth: { type: 'bearer', token: 'b-token-123' }, tls: { clientCertificate: b.cert, clientKey: b.key, ca: ca.cert } });
    await put('mtls-none', { url, tls: { ca: ca.cert } });
    await put('mtls-stranger', { url, tls: { clientCertificate: stranger.cert, clientKey: stranger.key, ca: ca.cert } });
    await put('mtls-wrong-ca', { url, tls: { clientCertificate: a.cert, clientKey: a.key, ca: otherCa.cert } });
    await put('mtls-system-ca', { url, tls: { clientCertificate: a.cert, clientKey: a.key } });

    // a and b alternate on the same server: each request carries its own receiver's certificate, never the other's
    const delivered = [];
    for (let i = 0; i < 3; i++) delivered.push(await deliver('mtls-a'), await deliver('mtls-b'));
    expect(delivered.map((c) => c.status)).toEqual(Array(6).fill('succeeded'));
    expect(tlsServer.seen.map((s) => s.client)).toEqual(['client-a', 'client-b', 'client-a', 'client-b', 'client-a', 'client-b']);
    expect(tlsServer.seen.map((s) => s.authorization)).toEqual([
      undefined,
      'Bearer b-token-123',
      undefined,
      'Bearer b-token-123',
      undefined,
      'Bearer b-token-123',
    ]);
    expect(delivered[0].attempts[0]).toMatchObject({ auth: null, outcome: 'success' });
    expect(delivered[1].attempts[0]).toMatchObject({ auth: 'bearer' });

    const before = tlsServer.seen.length;
    const noCertificate = await deliver('mtls-none');
    const strangerCall = await deliver('mtls-stranger');
    const wrongCa = await deliver('mtls-wrong-ca');
    const systemCa = await deliver('mtls-system-ca');
    for (const c of [noCertificate, strangerCall, wrongCa, systemCa]) expect(c.status).toBe('failed');
    expect(tlsServer.seen.length).toBe(before); // none of them got a request through
    // the server refused the first two (no certificate, one it does not trust); the service refused the server in the last two
    expect(noCertificate.attempts[0].statusCode).toBeNull();
    expect(wrongCa.attempts[0]).toMatchObject({ outcome: 'tls_error' });
    expect(String(wrongCa.attempts[0].error)).toMatch(/certificate|CERT/i);
    expect(systemCa.attempts[0]).toMatchObject({ outcome: 'tls_error' });
  });
});
