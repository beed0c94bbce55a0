import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SigningSecretService } from '../../src/signing/signing-secret.service.js';
import { Receiver } from '../support/receiver.js';
import { verifies } from '../support/signatures.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';

describe(SigningSecretService.name, () => {
  let service: TestService;
  let receiver: Receiver;

  beforeAll(async () => {
    service = await startTestService();
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    await service?.dispose();
    await receiver?.close();
  });

  async function currentSecrets(key?: string): Promise<string[]> {
    // Callbacks without a receiver are signed with their key's secret for their destination.
    const res = await service.apiJson(`/v1/signing-secret?destination=${encodeURIComponent(receiver.url)}`, { key });
    return res.secrets.map((s: { secret: string }) => s.secret);
  }

  async function deliver(callbacks: Array<Record<string, unknown>>): Promise<string[]> {
    const res = await service.api('/v1/batches', { method: 'POST', json: { callbacks } });
    expect(res.status).toBe(202);
    const batch = (await res.json()) as { id: string; callbacks: Array<{ id: string }> };
    await waitFor(async () => (await service.apiJson(`/v1/batches/${batch.id}`)).status === 'completed', 15_000);
    return batch.callbacks.map((c) => c.id);
  }

  it('should sign every request so that standardwebhooks verifies it, with a webhook-id stable across retries', async () => {
    const [secret, ...others] = await currentSecrets();
    expect(others).toEqual([]);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const ids = await deliver([
      { url: `${receiver.url}/json`, body: { order: 1, note: 'ünïcødé ✓' } },
      { url: `${receiver.url}/text`, body: 'plain text body' },
      { url: `${receiver.url}/empty`, method: 'DELETE' },
      { url: `${receiver.url}/flaky?failTimes=2`, body: { n: 2 }, retryDelaysMs: [0] },
    ]);
    const received = ids.flatMap((id) => receiver.byId(id));
    expect(received).toHaveLength(6);
    expect(receiver.byId(ids[3])).toHaveLength(3);
    for (const r of received) {
      expect({ url: r.url, verified: verifies(secret, r) }).toEqual({ url: r.url, verified: true });
      expect(r.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
      expect(Math.abs(Number(r.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30);
    }
  });

  it("should not verify with another key's secret for the same destination, nor a changed body, id or timestamp", async () => {
    const created = await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'other tenant' } });
    const [otherSecret] = await currentSecrets(created.key);
    const [secret] = await currentSecrets();
    expect(otherSecret).not.toBe(secret);
    const [id] = await deliver([{ url: `${receiver.url}/tamper`, body: { amount: 10 } }]);
    const [r] = receiver.byId(id);
    expect(verifies(secret, r)).toBe(true);
    expect(verifies(otherSecret, r)).toBe(false);
    expect(verifies(secret, { ...r, body: r.body.replace('10', '1000') })).toBe(false);
    const otherId = `${id.slice(0, -1)}${id.endsWith('0') ? '1' : '0'}`;
    expect(verifies(secret, { ...r, headers: { ...r.headers, 'webhook-id': otherId } })).toBe(false);
    expect(verifies(secret, { ...r, headers: { ...r.headers, 'webhook-timestamp': String(Number(r.headers['webhook-timestamp']) - 1) } })).toBe(false);
  });

  it('should sign with both secrets during the rotation overlap, so old and new verify', async () => {
    const [before] = await currentSecrets();
    const rotated = await service.apiJson(`/v1/signing-secret/rotate?destination=${encodeURIComponent(receiver.url)}`, { method: 'POST' });
    const [next, old] = rotated.secrets as Array<{ secret: string; expiresAt: string | null }>;
    expect(old.secret).toBe(before);
    expect(next.secret).not.toBe(before);
    expect(next.expiresAt).toBeNull();
    const overlapH = (Date.parse(old.expiresAt!) - Date.now()) / 3_600_000;
    expect(overlapH).toBeGreaterThan(23.9);
    expect(overlapH).toBeLessThanOrEqual(24);
    expect(await currentSecrets()).toEqual([next.secret, old.secret]);

    const ids = await deliver([{ url: `${receiver.url}/rotated`, body: { after: 'rotation' } }]);
    const [r] = receiver.byId(ids[0]);
    expect(String(r.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verifies(next.secret, r)).toBe(true);
    expect(verifies(old.secret, r)).toBe(true);
  });
});
