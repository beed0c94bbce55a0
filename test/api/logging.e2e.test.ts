import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppLogger } from '../../src/logging/app.logger.js';
import { createTestDatabase } from '../support/database.js';
import { spawnService, type ServiceProcess } from '../support/process.js';
import { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/service.js';
import { checkedFetch } from '../support/openapi-validator.js';

const KEY = 'cbk_logging_test_bootstrap_key_987654321';
type Line = Record<string, unknown> & { msg?: string; requestId?: string; level?: string };

/** The built service (`npm test` builds first) as its own process, so its real stdout is what we read. */
describe(`${AppLogger.name} in the running service`, () => {
  let proc: ServiceProcess;
  let url = '';
  const out = () => proc.output();
  let receiver: Receiver;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const jsonLines = (): Line[] =>
    out()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Line);
  const api = (path: string, init: RequestInit = {}) =>
    checkedFetch(url, `${url}${path}`, { ...init, headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...init.headers } });

  beforeAll(async () => {
    db = await createTestDatabase();
    receiver = await Receiver.start();
    proc = await spawnService({ DATABASE_URL: db.url, BOOTSTRAP_API_KEY: KEY, LOG_LEVEL: 'log' });
    url = proc.url;
  });
  afterAll(async () => {
    await proc?.stop();
    await receiver?.close();
    await db?.drop();
  });

  it('should keep the startup banner human-readable', () => {
    expect(out()).toMatch(/^callback dispatch service \(all\) listening on http:\/\/127\.0\.0\.1:\d+$/m);
    expect(out()).toMatch(/^ {2}API key: {3}the BOOTSTRAP_API_KEY you set \(admin\)$/m);
  });

  it('should log JSON lines with the request id on API lines, one per batch accepted and completed, secrets redacted', async () => {
    const res = await api('/v1/batches', {
      method: 'POST',
      headers: { 'x-request-id': 'log-test-1' },
      body: JSON.stringify({ label: 'logs', callbacks: [{ url: `${receiver.url}/?sleep=20` }, { url: `${receiver.url}/` }] }),
    });
    expect(res.status).toBe(202);
    const batch = (await res.json()) as { id: string };
    const secret = (await (await api(`/v1/signing-secret?destination=${encodeURIComponent(receiver.url)}`)).json()) as { secrets?: Array<{ secret: string }> };
    await waitFor(() => jsonLines().some((l) => String(l.msg).includes('completed') && JSON.stringify(l).includes(batch.id)), 10_000);
    await waitFor(() => jsonLines().some((l) => l.msg === 'request' && String(l.url).startsWith('/v1/signing-secret')), 5000);

    const lines = jsonLines();
    for (const l of lines) expect(l).toMatchObject({ level: expect.any(String), time: expect.any(String) });
    const accepted = lines.filter((l) => String(l.msg).includes('accepted') && JSON.stringify(l).includes(batch.id));
    expect(accepted).toHaveLength(1);
    expect(accepted[0]).toMatchObject({ requestId: 'log-test-1', event: 'batch_accepted', batchId: batch.id, callbacks: 2, label: 'logs' });
    const completed = lines.filter((l) => String(l.msg).includes('completed') && JSON.stringify(l).includes(batch.id));
    expect(completed).toEqual([expect.objectContaining({ event: 'batch_completed', batchId: batch.id, completedAt: expect.any(String) })]);
    const access = lines.filter((l) => l.msg === 'request' && l.url === '/v1/batches');
    expect(access).toEqual([expect.objectContaining({ requestId: 'log-test-1', method: 'POST', statusCode: 202, ms: expect.any(Number) })]);
    // Every line written while serving an API request names it.
    for (const l of lines.filter((x) => x.context === 'Http')) expect(l.requestId).toMatch(/\S/);

    expect(out()).not.toContain(KEY);
    expect(out()).not.toMatch(/whsec_/);
    expect(JSON.stringify(secret)).toMatch(/whsec_/); // the secret exists; it just never reaches the log
  });

  it('should log a refused request once, with its request id and status', async () => {
    const res = await api('/v1/history/latency?bucket=nope', { headers: { 'x-request-id': 'log-test-2' } });
    expect(res.status).toBe(400);
    await waitFor(() => jsonLines().some((l) => l.requestId === 'log-test-2'), 5000);
    expect(jsonLines().filter((l) => l.requestId === 'log-test-2')).toEqual([expect.objectContaining({ msg: 'request', statusCode: 400 })]);
  });

  it("should keep receivers' secrets out of the log, brought, made, rotated or refused", async () => {
    const brought = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
    const short = `whsec_${Buffer.from('too short').toString('base64')}`;
    const put = (name: string, body: unknown, id: string) =>
      api(`/v1/receivers/${name}`, { method: 'PUT', body: JSON.stringify(body), headers: { 'x-request-id': id } });
    expect((await put('logged-shop', { url: `${receiver.url}/shop`, secret: brought }, 'log-rcv-1')).status).toBe(201);
    expect((await put('logged-shop', { secret: short }, 'log-rcv-2')).status).toBe(400);
    expect((await put('logged-shop', { secret: 'whsec_not base64!' }, 'log-rcv-3')).status).toBe(400);
    const rotated = (await (
      await api('/v1/receivers/logged-shop/secret/rotate', { method: 'POST', body: '{}', headers: { 'x-request-id': 'log-rcv-4' } })
    ).json()) as { secrets: Array<{ secret: string }> };
    expect(rotated.secrets[1].secret).toBe(brought);
    await waitFor(
      () => ['log-rcv-1', 'log-rcv-2', 'log-rcv-3', 'log-rcv-4'].every((id) => jsonLines().some((l) => l.requestId === id && l.msg === 'request')),
      5000,
    );
    for (const secret of [brought, short, rotated.secrets[0].secret]) {
      expect(out()).not.toContain(secret.slice('whsec_'.length));
    }
    expect(out()).not.toMatch(/whsec_/);
  });
});
