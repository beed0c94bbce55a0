import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NetworkPolicy } from '../../src/common/network.policy.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';

type Attempt = { number: number; outcome: string; statusCode: number | null; error: string | null };
type CallbackView = { status: string; attempts: Attempt[] };

/**
 * The SSRF guard end to end. Every destination here is either on 127.0.0.0/8 or
 * refused by the connector before any socket is opened (IP literals are checked
 * before net.connect; names are resolved by our own lookup and refused before the
 * connect), so these tests send no packet beyond loopback.
 */
describe(NetworkPolicy.name, () => {
  // Each block stops what it started, so one service runs at a time.
  const started: Array<{ close: () => Promise<void> }> = [];
  const stopAll = async () => {
    for (const s of started.splice(0).reverse()) await s.close();
  };

  async function service(allowPrivateNetworks: string[]): Promise<TestService> {
    const s = await startTestService({ allowPrivateNetworks, role: 'all' });
    started.push({ close: s.dispose });
    return s;
  }
  async function receiver(host: string): Promise<Receiver> {
    const r = await Receiver.start({ host });
    started.push(r);
    return r;
  }

  async function sendAndSettle(s: TestService, callbacks: Array<Record<string, unknown>>): Promise<CallbackView[]> {
    const res = await s.api('/v1/batches', { method: 'POST', json: { callbacks } });
    expect(res.status).toBe(202);
    const batch = (await res.json()) as { id: string; callbacks: Array<{ id: string }> };
    await waitFor(async () => (await s.apiJson(`/v1/batches/${batch.id}`)).status === 'completed', 15_000);
    return Promise.all(batch.callbacks.map((c) => s.apiJson(`/v1/callbacks/${c.id}`)));
  }

  describe('with ALLOW_PRIVATE_NETWORKS unset', () => {
    let s: TestService;
    let loopback: Receiver;
    beforeAll(async () => {
      s = await service([]);
      loopback = await receiver('127.0.0.1');
    });
    afterAll(stopAll);

    it('should block private, loopback, link-local and reserved destinations after one attempt, saying why, and send nothing', async () => {
      const port = new URL(loopback.url).port;
      const urls = [
        `http://127.0.0.1:${port}/direct`,
        `http://localhost:${port}/by-name`,
        `http://[::1]:${port}/v6-loopback`,
        `http://[::ffff:127.0.0.1]:${port}/v4-mapped`,
        `http://[::ffff:0:7f00:1]:${port}/v4-translated`,
        `http://[::ffff:0:127.0.0.1]:${port}/v4-translated-dotted`,
        `http://[64:ff9b::7f00:1]:${port}/nat64`,
        `http://[2002:7f00:1::1]:${port}/6to4`,
        `http://2130706433:${port}/decimal-loopback`,
        `http://0x7f.1:${port}/hex-loopback`,
        `http://0.0.0.0:${port}/unspecified`,
        'http://169.254.169.254/latest/meta-data/',
        'http://[::ffff:a9fe:a9fe]/latest/meta-data/',
        'http://10.0.0.1/',
        'http://172.16.5.4:8080/',
        'http://192.168.1.1/',
        'http://100.64.0.1/',
        'http://224.0.0.1/',
        'http://[fd00::1]/',
        'http://[fe80::1]/',
        'https://10.1.2.3/tls',
      ];
      const views = await sendAndSettle(
        s,
        urls.map((url) => ({ url, retryDelaysMs: [0] })),
      );
      for (const [i, v] of views.entries()) {
        expect({ url: urls[i], status: v.status, attempts: v.attempts.length }).toEqual({ url: urls[i], status: 'failed', attempts: 1 });
        expect(v.attempts[0]).toMatchObject({ outcome: 'blocked', statusCode: null });
        expect(v.attempts[0].error).toMatch(/private or reserved range.*ALLOW_PRIVATE_NETWORKS/);
      }
      expect(loopback.requests).toHaveLength(0);
    });
  });

  describe('with ALLOW_PRIVATE_NETWORKS=127.0.0.2/32', () => {
    let s: TestService;
    let allowed: Receiver;
    let other: Receiver;
    beforeAll(async () => {
      s = await service(['127.0.0.2/32']);
      allowed = await receiver('127.0.0.2');
      other = await receiver('127.0.0.3');
    });
    afterAll(stopAll);

    it('should open only that address', async () => {
      const [ok, refused, alsoRefused] = await sendAndSettle(s, [
        { url: `${allowed.url}/in` },
        { url: `${other.url}/out`, retryDelaysMs: [0] },
        { url: `http://127.0.0.1:${new URL(allowed.url).port}/out`, retryDelaysMs: [0] },
      ]);
      expect(ok.status).toBe('succeeded');
      expect(allowed.requests.map((r) => r.url)).toEqual(['/in']);
      expect(refused).toMatchObject({ status: 'failed', attempts: [{ outcome: 'blocked' }] });
      expect(alsoRefused).toMatchObject({ status: 'failed', attempts: [{ outcome: 'blocked' }] });
      expect(other.requests).toHaveLength(0);
    });
  });

  describe('with ALLOW_PRIVATE_NETWORKS=127.0.0.0/8', () => {
    let s: TestService;
    let first: Receiver;
    let target: Receiver;
    beforeAll(async () => {
      s = await service(['127.0.0.0/8']);
      first = await receiver('127.0.0.1');
      target = await receiver('127.0.0.4');
    });
    afterAll(stopAll);

    it('should not follow a redirect: 302 is an http_error, failed at once, and the Location is never called', async () => {
      const location = `${target.url}/redirected`;
      const [v] = await sendAndSettle(s, [{ url: `${first.url}/moved?code=302&location=${encodeURIComponent(location)}` }]);
      expect(v).toMatchObject({ status: 'failed', attempts: [{ outcome: 'http_error', statusCode: 302 }] });
      expect(v.attempts).toHaveLength(1);
      expect(first.requests).toHaveLength(1);
      expect(target.requests).toHaveLength(0);
    });

    it('should keep only RESPONSE_SNIPPET_BYTES of what a receiver answers, however much it sends', async () => {
      const views = await sendAndSettle(s, [{ url: `${first.url}/big?bodyBytes=100000` }, { url: `${first.url}/huge?bodyBytes=3000000` }]);
      for (const v of views) {
        const [attempt] = v.attempts as Array<Attempt & { responseBody: string }>;
        expect(attempt.outcome).toBe('success');
        expect(attempt.responseBody).toBe('x'.repeat(1024));
      }
    });

    it('should connect by name to an allowed address the name resolves to', async () => {
      const [v] = await sendAndSettle(s, [{ url: `http://localhost:${new URL(first.url).port}/named` }]);
      expect(v).toMatchObject({ status: 'succeeded', attempts: [{ outcome: 'success', statusCode: 200 }] });
      expect(first.requests.at(-1)?.url).toBe('/named');
    });
  });
});
