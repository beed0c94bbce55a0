import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProxiedConnector } from '../../src/dispatch/transport/proxy.connector.js';
import { createTestDatabase } from '../support/database.js';
import { TestCertificates } from '../support/certificates.js';
import { spawnService, type ServiceProcess } from '../support/process.js';
import { startTestService, waitFor } from '../support/service.js';
import { checkedFetch } from '../support/openapi-validator.js';

const PROXY_SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), '../support/forward-proxy.mjs');
const KEY = 'cbk_egress_proxy_test_key_0123456789';

type ProxyEntry = { method: string; target: string; host: string | null; auth: string | null };
type Attempt = {
  outcome: string;
  statusCode: number | null;
  error: string | null;
  phases: { dnsMs: number | null; connectMs: number | null; tlsMs: number | null; tunnelMs?: number; firstByteMs: number | null };
};

/** The forward proxy as its own process (test/support/forward-proxy.mjs), and what it logged. */
async function startProxy(host: string, tls?: { cert: string; key: string }) {
  const proc: ChildProcess = spawn(process.execPath, [PROXY_SCRIPT, host, ...(tls ? [tls.cert, tls.key] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
  const seen: ProxyEntry[] = [];
  let buffered = '';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('proxy did not start')), 10_000);
    proc.stdout!.on('data', (chunk) => {
      buffered += chunk;
      for (let i; (i = buffered.indexOf('\n')) >= 0;) {
        const entry = JSON.parse(buffered.slice(0, i));
        buffered = buffered.slice(i + 1);
        if (entry.listening) {
          clearTimeout(timer);
          resolve(entry.listening);
        } else seen.push(entry);
      }
    });
    proc.on('exit', (code) => reject(new Error(`proxy exited ${code}`)));
  });
  /** What the proxy logged after entry `from`, once it has logged `n` (its stdout can lag the service's answer). */
  const after = (from: number, n: number) => waitFor(() => seen.length >= from + n && seen.slice(from), 5_000, 10);
  const stop = () => new Promise<void>((r) => (proc.exitCode !== null ? r() : (proc.once('exit', () => r()), proc.kill('SIGTERM'))));
  return { port, seen, after, stop };
}

/** A receiver that records the Host header and path of every request (http or https). */
function recordingServer(tls?: { cert: Buffer; key: Buffer }) {
  const got: Array<{ host: string | undefined; path: string; traceparent?: string }> = [];
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    got.push({ host: req.headers.host, path: req.url! });
    req.resume();
    req.on('end', () => res.end('ok'));
  };
  const server = tls ? https.createServer(tls, handler) : http.createServer(handler);
  return { server, got };
}

describe(buildProxiedConnector.name, () => {
  let dir: string;
  let httpProxy: Awaited<ReturnType<typeof startProxy>>;
  let tlsProxy: Awaited<ReturnType<typeof startProxy>>;
  let plain: ReturnType<typeof recordingServer>;
  let secure: ReturnType<typeof recordingServer>;
  /** In this process: its calls (http destinations and token endpoint) need no certificate trusted. */
  let viaHttp: { url: string };
  /** Its own process: it trusts the proxy's and the destination's certificates through NODE_EXTRA_CA_CERTS, which Node reads at start. */
  let viaHttps: ServiceProcess;
  const cleanups: Array<() => Promise<unknown>> = [];

  const api = (svc: { url: string }, p: string, json?: unknown) =>
    checkedFetch(svc.url, `${svc.url}${p}`, {
      method: json === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
  async function sendOne(svc: { url: string }, url: string): Promise<Attempt> {
    const res = await api(svc, '/v1/batches', { callbacks: [{ url, maxAttempts: 1 }] });
    expect(res.status).toBe(202);
    const { callbacks } = (await res.json()) as { callbacks: Array<{ id: string }> };
    return waitFor(async () => ((await (await api(svc, `/v1/callbacks/${callbacks[0].id}`)).json()) as { attempts: Attempt[] }).attempts[0], 15_000);
  }

  beforeAll(async () => {
    const certificates = new TestCertificates();
    cleanups.push(async () => certificates.remove());
    dir = certificates.dir;
    // Two self-signed certificates: one for `localhost` only (no IP in it), trusted by
    // the service through NODE_EXTRA_CA_CERTS; the https proxy on 127.0.0.3 uses the other.
    const cert = (name: string, san: string) => {
      const made = certificates.selfSigned(name, san);
      return { cert: made.certFile, key: made.keyFile };
    };
    const dest = cert('localhost', 'DNS:localhost');
    const proxyCert = cert('proxy', 'IP:127.0.0.3');
    execFileSync('sh', ['-c', `cat "${dest.cert}" "${proxyCert.cert}" > "${path.join(dir, 'trusted.pem')}"`]);

    plain = recordingServer();
    secure = recordingServer({ cert: readFileSync(dest.cert), key: readFileSync(dest.key) });
    await new Promise<void>((r) => plain.server.listen(0, '127.0.0.1', r));
    await new Promise<void>((r) => secure.server.listen(0, '127.0.0.1', r));
    cleanups.push(async () => {
      plain.server.closeAllConnections();
      plain.server.close();
      secure.server.closeAllConnections();
      secure.server.close();
    });

    // The proxies live on 127.0.0.3, outside ALLOW_PRIVATE_NETWORKS: the policy
    // checks destinations, not the proxy the operator configured.
    [httpProxy, tlsProxy] = await Promise.all([startProxy('127.0.0.3'), startProxy('127.0.0.3', proxyCert)]);
    cleanups.push(httpProxy.stop, tlsProxy.stop);
    // A database each: both services run workers, which would claim each other's callbacks.
    const dbHttps = await createTestDatabase();
    cleanups.push(dbHttps.drop);
    const inProcess = await startTestService({
      bootstrapApiKey: KEY,
      allowPrivateNetworks: ['127.0.0.1/32'],
      egressProxyUrl: `http://user:s3cret@127.0.0.3:${httpProxy.port}`,
    });
    viaHttp = inProcess;
    cleanups.push(inProcess.dispose);
    viaHttps = await spawnService({
      DATABASE_URL: dbHttps.url,
      BOOTSTRAP_API_KEY: KEY,
      LOG_LEVEL: 'error',
      ALLOW_PRIVATE_NETWORKS: '127.0.0.1/32',
      NODE_EXTRA_CA_CERTS: path.join(dir, 'trusted.pem'),
      EGRESS_PROXY_URL: `https://127.0.0.3:${tlsProxy.port}`,
    });
    cleanups.push(viaHttps.stop);
  });
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  it('should tunnel an http callback to the address it resolved and checked, with Host unchanged', async () => {
    const { port } = plain.server.address() as AddressInfo;
    const before = httpProxy.seen.length;
    const a = await sendOne(viaHttp, `http://localhost:${port}/plain?x=1`);
    expect(a.outcome).toBe('success');
    // The proxy was asked for the checked IP, never for the name it could resolve elsewhere.
    expect(await httpProxy.after(before, 1)).toEqual([
      { method: 'CONNECT', target: `127.0.0.1:${port}`, host: `127.0.0.1:${port}`, auth: `Basic ${Buffer.from('user:s3cret').toString('base64')}` },
    ]);
    expect(plain.got.at(-1)).toMatchObject({ host: `localhost:${port}`, path: '/plain?x=1' });
    expect(a.phases.dnsMs).toBeGreaterThan(0);
    expect(a.phases.connectMs).toBeGreaterThan(0);
    expect(a.phases.tunnelMs).toBeGreaterThan(0);
    expect(a.phases.tlsMs).toBeNull();
    expect(a.phases.firstByteMs).toBeGreaterThanOrEqual(a.phases.dnsMs! + a.phases.connectMs! + a.phases.tunnelMs!);
  });

  it('should verify TLS against the destination name inside a tunnel through an https proxy', async () => {
    const { port } = secure.server.address() as AddressInfo;
    const before = tlsProxy.seen.length;
    const a = await sendOne(viaHttps, `https://localhost:${port}/secure`);
    expect(a.outcome).toBe('success');
    expect(await tlsProxy.after(before, 1)).toEqual([{ method: 'CONNECT', target: `127.0.0.1:${port}`, host: `127.0.0.1:${port}`, auth: null }]);
    expect(secure.got.at(-1)).toMatchObject({ host: `localhost:${port}`, path: '/secure' });
    for (const phase of ['dnsMs', 'connectMs', 'tunnelMs', 'tlsMs'] as const) expect(a.phases[phase], phase).toBeGreaterThan(0);

    // The certificate names `localhost` only: by its IP the same server fails
    // verification, so the name checked is the destination's, not the proxy's.
    const byIp = await sendOne(viaHttps, `https://127.0.0.1:${port}/by-ip`);
    expect(byIp.outcome).toBe('tls_error');
    expect(secure.got.some((g) => g.path === '/by-ip')).toBe(false);
  });

  it("should fetch a receiver's OAuth2 token through the proxy as its callbacks go, and refuse a token endpoint the policy blocks before the proxy sees it", async () => {
    const tokens = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"access_token":"proxied-token-1","expires_in":600}'));
    });
    const hook = recordingServer();
    const seenAuth: Array<string | undefined> = [];
    hook.server.on('request', (req: http.IncomingMessage) => seenAuth.push(req.headers.authorization));
    await new Promise<void>((r) => tokens.listen(0, '127.0.0.1', r));
    await new Promise<void>((r) => hook.server.listen(0, '127.0.0.1', r));
    cleanups.push(async () => {
      tokens.close();
      hook.server.closeAllConnections();
      hook.server.close();
    });
    const tokenPort = (tokens.address() as AddressInfo).port;
    const hookPort = (hook.server.address() as AddressInfo).port;
    const put = (name: string, tokenUrl: string) =>
      checkedFetch(viaHttp.url, `${viaHttp.url}/v1/receivers/${name}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          url: `http://127.0.0.1:${hookPort}/hook`,
          auth: { type: 'oauth2', tokenUrl, clientId: 'c', clientSecret: 'proxy-client-secret' },
        }),
      });
    expect((await put('proxied', `http://127.0.0.1:${tokenPort}/token`)).status).toBe(201);
    expect((await put('proxied-blocked', 'http://127.0.0.9:8080/token')).status).toBe(201);
    const sendTo = async (receiver: string) => {
      const res = await api(viaHttp, '/v1/batches', { callbacks: [{ receiver, maxAttempts: 1 }] });
      const { callbacks } = (await res.json()) as { callbacks: Array<{ id: string }> };
      return waitFor(async () => {
        const c = (await (await api(viaHttp, `/v1/callbacks/${callbacks[0].id}`)).json()) as {
          status: string;
          lastError: string | null;
          attempts: Array<Attempt & { auth: string | null }>;
        };
        return c.status === 'succeeded' || c.status === 'failed' ? c : undefined;
      }, 15_000);
    };
    const before = httpProxy.seen.length;
    const ok = await sendTo('proxied');
    expect(ok.status).toBe('succeeded');
    expect(ok.attempts[0].auth).toBe('oauth2');
    expect(seenAuth.at(-1)).toBe('Bearer proxied-token-1');
    // the token request and the callback, each through its own tunnel to the address checked
    expect((await httpProxy.after(before, 2)).map((e) => e.target).sort()).toEqual([`127.0.0.1:${hookPort}`, `127.0.0.1:${tokenPort}`].sort());

    const blocked = await sendTo('proxied-blocked');
    expect(blocked.attempts[0].outcome).toBe('auth_error');
    expect(blocked.lastError).toMatch(/^token endpoint http:\/\/127\.0\.0\.9:8080\/token failed: ERR_DESTINATION_BLOCKED/);
    expect(httpProxy.seen.slice(before).map((e) => e.target)).not.toContain('127.0.0.9:8080');
  });

  it('should refuse blocked destinations before anything reaches the proxy', async () => {
    const before = httpProxy.seen.length;
    for (const url of ['http://127.0.0.9:8080/', 'http://[::1]:8080/', 'http://10.0.0.1/', 'http://169.254.169.254/latest/meta-data']) {
      const a = await sendOne(viaHttp, url);
      expect(a.outcome, url).toBe('blocked');
    }
    // Then an allowed one, so the proxy's log is known to be current when read.
    const { port } = plain.server.address() as AddressInfo;
    expect((await sendOne(viaHttp, `http://127.0.0.1:${port}/after-blocked`)).outcome).toBe('success');
    expect((await httpProxy.after(before, 1)).map((e) => e.target)).toEqual([`127.0.0.1:${port}`]);
    await new Promise((r) => setTimeout(r, 100));
    expect(httpProxy.seen.length).toBe(before + 1);
  });

  it('should record a proxy that refuses the tunnel as a connect_error saying so', async () => {
    // The test proxy refuses CONNECT outside loopback; 127.0.0.1 on a port nothing
    // listens on makes it answer 502 (its upstream connect fails).
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const { port } = closed.address() as AddressInfo;
    await new Promise((r) => closed.close(r));
    const a = await sendOne(viaHttp, `http://127.0.0.1:${port}/`);
    expect(a.outcome).toBe('connect_error');
    expect(a.error).toMatch(/proxy answered CONNECT 127\.0\.0\.1:\d+ with 502/);
  });
});
