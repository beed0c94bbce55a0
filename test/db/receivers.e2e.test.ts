import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReceiverService } from '../../src/receivers/receiver.service.js';
import { connect } from '../support/database.js';
import { Receiver, type ReceivedRequest } from '../support/receiver.js';
import { verifies } from '../support/signatures.js';
import { jsonOf, startTestService, waitFor, waitForLockWaiter, type TestService } from '../support/service.js';

const secretOf = (r: { secrets: Array<{ secret: string }> }) => r.secrets[0].secret;

describe(ReceiverService.name, () => {
  let service: TestService;
  let shopA: Receiver;
  let shopB: Receiver;

  beforeAll(async () => {
    // Auto-disable after 1.8 s of failures only, checked every 200 ms (the default is 120 h).
    service = await startTestService({ receiverDisableAfterHours: 0.0005, receiverCheckIntervalMs: 200, dispatchPollMs: 200 });
    [shopA, shopB] = await Promise.all([Receiver.start({ host: '127.0.0.2' }), Receiver.start({ host: '127.0.0.3' })]);
  });
  afterAll(async () => {
    await service?.dispose();
    await Promise.all([shopA?.close(), shopB?.close()]);
  });

  const put = (name: string, json: Record<string, unknown>, key?: string) =>
    service.api(`/v1/receivers/${encodeURIComponent(name)}`, { method: 'PUT', json, key });

  async function send(body: Record<string, unknown>, key?: string): Promise<{ id: string; callbacks: Array<{ id: string }> }> {
    const res = await service.api('/v1/batches', { method: 'POST', json: body, key });
    expect(res.status, JSON.stringify(await res.clone().json())).toBe(202);
    return res.json() as Promise<{ id: string; callbacks: Array<{ id: string }> }>;
  }

  async function deliver(body: Record<string, unknown>, key?: string): Promise<string[]> {
    const batch = await send(body, key);
    await waitFor(async () => (await service.apiJson(`/v1/batches/${batch.id}`, { key })).status === 'completed', 15_000);
    return batch.callbacks.map((c) => c.id);
  }

  const received = (id: string) => [...shopA.byId(id), ...shopB.byId(id)];
  const batchCount = async () => Number((await service.apiJson('/v1/batches?limit=500')).items.length);

  it("should sign each receiver's callbacks with its own secret only, never another receiver's or a destination's", async () => {
    const created = await Promise.all([
      put('merchant-a', { url: `${shopA.url}/hooks` }),
      put('merchant-b', { url: `${shopB.url}/hooks` }),
      // two receivers on one shared host: still a secret each
      put('merchant-c', { url: `${shopB.url}/c/hooks` }),
    ]);
    expect(created.map((r) => r.status)).toEqual([201, 201, 201]);
    const [a, b, c] = await Promise.all(created.map(jsonOf));
    for (const r of [a, b, c]) {
      expect(r.secrets).toHaveLength(1);
      expect(r.secrets[0]).toEqual({ secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/), createdAt: expect.any(String), expiresAt: null });
    }
    const secrets = { a: secretOf(a), b: secretOf(b), c: secretOf(c) };
    expect(new Set(Object.values(secrets)).size).toBe(3);

    const ids = await deliver({
      callbacks: [
        { receiver: 'merchant-a', body: { order: 42, paid: true } },
        { receiver: 'merchant-b', body: { order: 43 } },
        { receiver: 'merchant-c', body: { order: 44 } },
        // a per-order notify URL, still signed as merchant-a
        { receiver: 'merchant-a', url: `${shopA.url}/orders/45/notify`, body: { order: 45 } },
        // no receiver: signed with the key's secret for that destination
        { url: `${shopB.url}/plain`, body: { order: 46 } },
      ],
    });
    const [ra, rb, rc, ra2, plain] = ids.map((id) => received(id));
    expect([ra, rb, rc, ra2, plain].map((r) => r.length)).toEqual([1, 1, 1, 1, 1]);
    expect(ra[0].url).toBe('/hooks');
    expect(ra2[0].url).toBe('/orders/45/notify');
    expect(rc[0].url).toBe('/c/hooks');

    const destB = (await service.apiJson(`/v1/signing-secret?destination=${encodeURIComponent(shopB.url)}`)).secrets[0].secret;
    const destA = (await service.apiJson(`/v1/signing-secret?destination=${encodeURIComponent(shopA.url)}`)).secrets[0].secret;
    const all = { ...secrets, destA, destB };
    const verifiedBy = (r: ReceivedRequest) =>
      Object.entries(all)
        .filter(([, s]) => verifies(s, r))
        .map(([k]) => k);
    expect(verifiedBy(ra[0])).toEqual(['a']);
    expect(verifiedBy(ra2[0])).toEqual(['a']);
    expect(verifiedBy(rb[0])).toEqual(['b']);
    expect(verifiedBy(rc[0])).toEqual(['c']);
    expect(verifiedBy(plain[0])).toEqual(['destB']);
    expect(destA).not.toBe(destB);

    const cb = await service.apiJson(`/v1/callbacks/${ids[0]}`);
    expect(cb).toMatchObject({ receiver: 'merchant-a', url: `${shopA.url}/hooks`, status: 'succeeded', waiting: null });
    expect((await service.apiJson(`/v1/callbacks/${ids[4]}`)).receiver).toBeNull();
  });

  it("should answer a secret per destination, 400 without one, and keep another destination's when one rotates", async () => {
    const res = await service.api('/v1/signing-secret');
    expect(res.status).toBe(400);
    expect((await jsonOf(res)).message).toMatch(/destination/);
    expect((await service.api('/v1/signing-secret?destination=https://shop.example/path')).status).toBe(400);
    const q = (d: string) => `?destination=${encodeURIComponent(d)}`;
    const first = await service.apiJson(`/v1/signing-secret${q('https://shop.example')}`);
    expect(first.destination).toBe('https://shop.example:443');
    expect((await service.apiJson(`/v1/signing-secret${q('https://shop.example:443')}`)).secrets).toEqual(first.secrets);
    const other = await service.apiJson(`/v1/signing-secret${q('https://other.example')}`);
    expect(other.secrets[0].secret).not.toBe(first.secrets[0].secret);
    const rotated = await service.apiJson(`/v1/signing-secret/rotate${q('https://shop.example:443')}`, { method: 'POST' });
    expect(rotated.secrets.map((s: { secret: string }) => s.secret).slice(1)).toEqual([first.secrets[0].secret]);
    expect((await service.apiJson(`/v1/signing-secret${q('https://other.example')}`)).secrets).toEqual(other.secrets);
  });

  it("should rotate one receiver's secret and leave the others alone", async () => {
    const before = { a: secretOf(await service.apiJson('/v1/receivers/merchant-a')), b: secretOf(await service.apiJson('/v1/receivers/merchant-b')) };
    const rotated = await service.apiJson('/v1/receivers/merchant-a/secret/rotate', { method: 'POST' });
    expect(rotated.secrets).toHaveLength(2);
    expect(rotated.secrets[1].secret).toBe(before.a);
    expect(Date.parse(rotated.secrets[1].expiresAt) - Date.now()).toBeGreaterThan(23.9 * 3600_000);
    const next = secretOf(rotated);
    const b = await service.apiJson('/v1/receivers/merchant-b');
    expect(b.secrets.map((s: { secret: string }) => s.secret)).toEqual([before.b]);

    const [ida, idb] = await deliver({
      callbacks: [
        { receiver: 'merchant-a', body: { r: 1 } },
        { receiver: 'merchant-b', body: { r: 2 } },
      ],
    });
    const [ra] = received(ida);
    const [rb] = received(idb);
    expect(String(ra.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect([verifies(next, ra), verifies(before.a, ra), verifies(before.b, ra)]).toEqual([true, true, false]);
    expect(String(rb.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect([verifies(before.b, rb), verifies(next, rb), verifies(before.a, rb)]).toEqual([true, false, false]);
  });

  // Regression: rotations at once failed on the current-secret index (500), and each rotation within a day added a signature.
  it('should rotate one after another when asked at once, and sign with two secrets at most', async () => {
    await service.apiJson('/v1/receivers/rotate-many', { method: 'PUT', json: { url: `${shopA.url}/rotate-many` } });
    const answers = await Promise.all(Array.from({ length: 8 }, () => service.api('/v1/receivers/rotate-many/secret/rotate', { method: 'POST' })));
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(200));
    const last = await service.apiJson('/v1/receivers/rotate-many/secret/rotate', { method: 'POST' });
    expect(last.secrets).toHaveLength(2);
    expect(last.secrets[0].expiresAt).toBeNull();
    expect(Date.parse(last.secrets[1].expiresAt) - Date.now()).toBeGreaterThan(23.9 * 3600_000);
    const [id] = await deliver({ callbacks: [{ receiver: 'rotate-many', body: { r: 9 } }] });
    const [got] = received(id);
    expect(String(got.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect((await service.apiJson('/v1/receivers/rotate-many')).secrets).toHaveLength(2);
    expect((await service.api('/v1/receivers/rotate-many', { method: 'DELETE' })).status).toBe(200); // out of the lists below
  });

  it('should take a brought secret, resolve settings callback > defaults > receiver > configuration, and update with 200', async () => {
    const brought = `whsec_${randomBytes(24).toString('base64')}`;
    const res = await put('merchant-d', {
      url: `${shopA.url}/d`,
      secret: brought,
      headers: { 'x-shop': 'd', 'x-level': 'receiver' },
      timeoutMs: 4000,
      maxAttempts: 3,
      retryDelaysMs: [0],
      description: 'shop D',
    });
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ name: 'merchant-d', description: 'shop D', timeoutMs: 4000, secrets: [{ secret: brought }] });

    const [id1, id2] = await deliver({
      defaults: { receiver: 'merchant-d', headers: { 'x-level': 'defaults' } },
      callbacks: [{ body: { n: 1 } }, { body: { n: 2 }, headers: { 'x-level': 'callback' }, timeoutMs: 2000, url: `${shopA.url}/d2` }],
    });
    const [r1] = received(id1);
    const [r2] = received(id2);
    expect([r1.headers['x-shop'], r1.headers['x-level'], r2.headers['x-level']]).toEqual(['d', 'defaults', 'callback']);
    expect([verifies(brought, r1), verifies(brought, r2)]).toEqual([true, true]);
    expect(await service.apiJson(`/v1/callbacks/${id1}`)).toMatchObject({ timeoutMs: 4000, maxAttempts: 3, receiver: 'merchant-d' });
    expect(await service.apiJson(`/v1/callbacks/${id2}`)).toMatchObject({ timeoutMs: 2000, maxAttempts: 3 });

    const updated = await put('merchant-d', { description: 'shop D, moved' });
    expect(updated.status).toBe(200);
    expect(await updated.json()).toMatchObject({ description: 'shop D, moved', url: `${shopA.url}/d`, timeoutMs: 4000, secrets: [{ secret: brought }] });
    // null clears a setting; for disabled and secret it leaves them as they are
    const cleared = await jsonOf(await put('merchant-d', { timeoutMs: null, headers: null, retryDelaysMs: null, disabled: null, secret: null }));
    expect(cleared).toMatchObject({ timeoutMs: null, headers: {}, retryDelaysMs: [], maxAttempts: 3, disabled: false, secrets: [{ secret: brought }] });
    expect(cleared.secrets).toHaveLength(1);
  });

  it('should refuse bad receivers and unknown receiver names with a 400 that stores nothing', async () => {
    const short = await put('merchant-x', { secret: `whsec_${randomBytes(16).toString('base64')}` });
    expect(short.status).toBe(400);
    expect((await jsonOf(short)).message).toMatch(/24 bytes/);
    expect((await put('merchant-x', { secret: 'not-a-secret' })).status).toBe(400);
    expect((await put('merchant-x', { url: 'ftp://x.example' })).status).toBe(400);
    expect((await put('merchant-x', { nope: 1 })).status).toBe(400);
    expect((await put('bad name!', {})).status).toBe(400);
    expect((await service.api('/v1/receivers/merchant-x')).status).toBe(404);

    const before = await batchCount();
    const res = await service.api('/v1/batches', {
      method: 'POST',
      json: { callbacks: [{ receiver: 'merchant-a', body: 1 }, { receiver: 'merchant-nope', body: 2 }, { receiver: 'merchant-zz' }] },
    });
    expect(res.status).toBe(400);
    const error = await jsonOf(res);
    expect(error.message).toMatch(/merchant-nope/);
    expect(error.details.receivers).toEqual(['merchant-nope', 'merchant-zz']);
    const noUrl = await service.api('/v1/batches', { method: 'POST', json: { callbacks: [{ body: 1 }] } });
    expect(noUrl.status).toBe(400);
    expect(await batchCount()).toBe(before);
  });

  it("should keep one key's receivers from another key (404, and a 400 for its name in a batch)", async () => {
    const other = (await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'tenant two', allowPrivateNetworks: true } })).key as string;
    expect((await service.api('/v1/receivers/merchant-a', { key: other })).status).toBe(404);
    expect((await service.api('/v1/receivers/merchant-a/secret/rotate', { method: 'POST', key: other })).status).toBe(404);
    expect((await service.api('/v1/receivers/merchant-a', { method: 'DELETE', key: other })).status).toBe(404);
    expect((await service.apiJson('/v1/receivers', { key: other })).items).toEqual([]);
    const res = await service.api('/v1/batches', { method: 'POST', key: other, json: { callbacks: [{ receiver: 'merchant-a', body: 1 }] } });
    expect(res.status).toBe(400);
    // the same name under the other key is its own receiver with its own secret
    const mine = await jsonOf(await put('merchant-a', { url: `${shopA.url}/two` }, other));
    expect(secretOf(mine)).not.toBe(secretOf(await service.apiJson('/v1/receivers/merchant-a')));
    const [id] = await deliver({ callbacks: [{ receiver: 'merchant-a', body: { t: 2 } }] }, other);
    const [r] = received(id);
    expect(r.url).toBe('/two');
    expect(verifies(secretOf(mine), r)).toBe(true);
    expect(verifies(secretOf(await service.apiJson('/v1/receivers/merchant-a')), r)).toBe(false);
  });

  it("should hold a disabled receiver's callbacks (pending, no attempt, shown as held) and send them once enabled", async () => {
    expect((await put('merchant-e', { url: `${shopB.url}/e`, disabled: true })).status).toBe(201);
    const batch = await send({ callbacks: [1, 2, 3].map((n) => ({ receiver: 'merchant-e', body: { n } })) });
    const [other] = await deliver({ callbacks: [{ receiver: 'merchant-b', body: { beside: 'held' } }] });
    // the others go out meanwhile: the claim that took it, stored after these, passed them over
    expect(received(other)).toHaveLength(1);
    for (const { id } of batch.callbacks) {
      expect(received(id)).toEqual([]);
      expect(await service.apiJson(`/v1/callbacks/${id}`)).toMatchObject({
        status: 'pending',
        attemptCount: 0,
        attempts: [],
        receiver: 'merchant-e',
        waiting: { reason: 'receiver_disabled' },
        nextAttemptAt: null,
      });
    }
    const shown = await service.apiJson('/v1/receivers/merchant-e');
    expect(shown).toMatchObject({ disabled: true, disabledReason: expect.any(String), figures: { held: 3, pending: 0, inFlight: 0 } });
    const listed = await service.apiJson('/v1/callbacks?receiver=merchant-e');
    expect(listed.items.map((c: { id: string }) => c.id)).toEqual(batch.callbacks.map((c) => c.id));

    const enabled = await put('merchant-e', { disabled: false });
    expect(enabled.status).toBe(200);
    expect(await enabled.json()).toMatchObject({ disabled: false, disabledReason: null });
    await waitFor(async () => (await service.apiJson(`/v1/batches/${batch.id}`)).status === 'completed', 15_000);
    for (const { id } of batch.callbacks) {
      expect(received(id)).toHaveLength(1);
      expect(await service.apiJson(`/v1/callbacks/${id}`)).toMatchObject({ status: 'succeeded', attemptCount: 1, waiting: null });
    }
    const figures = (await service.apiJson('/v1/receivers/merchant-e')).figures;
    expect(figures).toMatchObject({ held: 0, pending: 0, attempts: 3, outcomes: { success: 3 } });
    expect(figures.latency.p50).toBeGreaterThan(0);
    const latency = await service.apiJson('/v1/history/latency?receiver=merchant-e');
    expect(latency.items.reduce((n: number, b: { count: number }) => n + b.count, 0)).toBe(3);
    expect((await service.api('/v1/history/latency?receiver=merchant-nope')).status).toBe(404);
  });

  it('should disable a receiver whose every attempt failed for RECEIVER_DISABLE_AFTER_HOURS, hold the rest, and say why', async () => {
    await put('merchant-f', { url: `${shopA.url}/f?code=503`, retryDelaysMs: [150], maxAttempts: 100 });
    const batch = await send({
      callbacks: [
        { receiver: 'merchant-f', body: { n: 1 } },
        { receiver: 'merchant-f', body: { n: 2 } },
      ],
    });
    const disabled = await waitFor(async () => {
      const r = await service.apiJson('/v1/receivers/merchant-f');
      return r.disabled ? r : undefined;
    }, 15_000);
    expect(disabled.disabledReason).toMatch(/every attempt failed/);
    expect(Date.parse(disabled.disabledAt) - Date.parse(disabled.failingSince)).toBeGreaterThanOrEqual(1800);
    // what was in flight at the moment lands, and both are held
    const held = async () => {
      for (const { id } of batch.callbacks) {
        const c = await service.apiJson(`/v1/callbacks/${id}`);
        if (c.status !== 'pending' || c.waiting?.reason !== 'receiver_disabled') return false;
      }
      return true;
    };
    await waitFor(held, 10_000);
    const sent = batch.callbacks.map(({ id }) => received(id).length);
    // then nothing more goes out: a claim after the hold sends another receiver's callback and passes these over
    await deliver({ callbacks: [{ receiver: 'merchant-b', body: { after: 'the disable' } }] });
    expect(batch.callbacks.map(({ id }) => received(id).length)).toEqual(sent);
    for (const { id } of batch.callbacks) {
      expect(await service.apiJson(`/v1/callbacks/${id}`)).toMatchObject({
        status: 'pending',
        waiting: { reason: 'receiver_disabled', detail: expect.stringMatching(/merchant-f/) },
      });
    }
    const metrics = await (await service.api('/metrics', { key: null })).text();
    expect(metrics).toMatch(/^receivers_auto_disabled_total 1$/m);

    // deleting it cancels what it held, and says so
    const deleted = await service.api('/v1/receivers/merchant-f', { method: 'DELETE' });
    expect(await deleted.json()).toEqual({ name: 'merchant-f', deleted: true, cancelledCallbacks: 2, task: null });
    expect((await service.api('/v1/receivers/merchant-f')).status).toBe(404);
    for (const { id } of batch.callbacks) expect((await service.apiJson(`/v1/callbacks/${id}`)).status).toBe('cancelled');
  });

  it('should refuse a batch whose receiver is deleted while it is stored, and store nothing of it (regression: a 500)', async () => {
    await put('merchant-gone', { url: `${shopA.url}/gone` });
    const db = await connect(service.databaseUrl);
    // pg_stat_activity is read once per transaction: watched from a session outside db's
    const watcher = await connect(service.databaseUrl);
    try {
      await db.query('BEGIN');
      await db.query(`DELETE FROM receiver WHERE name = 'merchant-gone'`); // row locked, not yet committed
      const before = await batchCount();
      const pending = service.api('/v1/batches', { method: 'POST', json: { callbacks: [{ receiver: 'merchant-gone', body: 1 }] } });
      await waitForLockWaiter(watcher, 'INSERT INTO batch'); // the batch found the receiver and now waits on its row lock
      await db.query('COMMIT');
      const res = await pending;
      expect(res.status).toBe(400);
      expect((await jsonOf(res)).message).toMatch(/deleted while the batch was being stored/);
      expect(await batchCount()).toBe(before);
    } finally {
      await db.end();
      await watcher.end();
    }
  });

  it("should detach a deleted receiver's finished callbacks in their time partitions, and retry one without it", async () => {
    // callback.receiver_id has its foreign key on callback_live only (migration
    // callback_receiver_fkey_live): nothing but the delete task keeps finished rows from
    // naming a receiver that is gone, and a retry moves such a row back under the key.
    expect((await put('merchant-h', { url: 'http://127.0.0.2:9/h' })).status).toBe(201); // nothing listens: a connect error
    const batch = await send({ callbacks: [{ receiver: 'merchant-h', body: 1, maxAttempts: 1 }] });
    const [{ id }] = batch.callbacks;
    await waitFor(async () => (await service.apiJson(`/v1/callbacks/${id}`)).status === 'failed', 15_000);
    const db = await connect(service.databaseUrl);
    try {
      const receiverId = (await db.query(`SELECT id FROM receiver WHERE name = 'merchant-h'`)).rows[0].id as string;
      const row = async () => (await db.query(`SELECT receiver_id, done_at = 'infinity' AS live FROM callback WHERE id = $1`, [id])).rows[0];
      expect(await row()).toEqual({ receiver_id: receiverId, live: false });
      const deleted = await service.api('/v1/receivers/merchant-h', { method: 'DELETE' });
      expect((await jsonOf(deleted)).task).toBeNull(); // done before the answer
      expect(await row()).toEqual({ receiver_id: null, live: false });
      expect((await db.query(`SELECT count(*)::int AS n FROM callback WHERE receiver_id = $1`, [receiverId])).rows[0].n).toBe(0);
      const retried = await service.api(`/v1/callbacks/${id}/retry`, { method: 'POST' });
      expect(retried.status, await retried.clone().text()).toBe(202);
      expect(await row()).toEqual({ receiver_id: null, live: true });
      await waitFor(async () => (await service.apiJson(`/v1/callbacks/${id}`)).attempts.length === 2, 15_000);
    } finally {
      await db.end();
    }
  });

  it('should list receivers in name order, paged, without their secrets', async () => {
    const page = await service.apiJson('/v1/receivers?limit=2');
    expect(page.items.map((r: { name: string }) => r.name)).toEqual(['merchant-a', 'merchant-b']);
    expect(page.items[0].secrets).toBeUndefined();
    const next = await service.apiJson(`/v1/receivers?limit=100&cursor=${page.nextCursor}`);
    expect(next.items.map((r: { name: string }) => r.name)).toEqual(['merchant-c', 'merchant-d', 'merchant-e']);
    expect(next.nextCursor).toBeNull();
  });
});
