import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppConfig } from '../../src/config/app.config.js';
import { RetentionService } from '../../src/retention/retention.service.js';
import { connect } from '../support/database.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';

const H = 3_600_000;

describe(RetentionService.name, () => {
  let service: TestService;
  let db: pg.Client;
  let keyId: string;

  async function batch(completedHoursAgo: number | null): Promise<string> {
    const completedAt = completedHoursAgo === null ? null : new Date(Date.now() - completedHoursAgo * H);
    const {
      rows: [b],
    } = await db.query(
      `INSERT INTO batch (id, api_key_id, total, created_at, completed_at) VALUES (gen_random_uuid(), $1, 1, now() - interval '60 hours', $2) RETURNING id`,
      [keyId, completedAt],
    );
    return b.id;
  }

  /** A callback in `status`, finished `hoursAgo` (when finished), with `attempts` attempts that started before that. */
  async function callback(batchId: string, status: string, hoursAgo: number, attempts = 2): Promise<string> {
    const finished = ['succeeded', 'failed', 'cancelled'].includes(status);
    const at = new Date(Date.now() - hoursAgo * H);
    const {
      rows: [c],
    } = await db.query(
      `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, timeout_ms, max_attempts, status, attempts,
                             next_attempt_at, completed_at, created_at, lease_owner, lease_expires_at)
       VALUES (gen_random_uuid(), $1, $2, 'http://127.0.0.1:9/x', 'http://127.0.0.1:9', 'POST', 1000, 8, $3, $4,
               $5, $6, $5::timestamptz - interval '1 hour', $7, $8) RETURNING id`,
      [
        batchId,
        keyId,
        status,
        attempts,
        at,
        finished ? at : null,
        status === 'in_flight' ? 'someone' : null,
        status === 'in_flight' ? new Date(Date.now() + H) : null,
      ],
    );
    await db.query(
      `INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, outcome)
       SELECT $1, $2, 'http://127.0.0.1:9', n, $3::timestamptz - (n * interval '1 minute'), 10 * n, 'success'
       FROM generate_series(1, $4::int) AS n`,
      [c.id, keyId, at, attempts],
    );
    return c.id;
  }

  const ids = async (table: string) => (await db.query(`SELECT id FROM ${table} ORDER BY id`)).rows.map((r) => String(r.id));
  const snapshot = async () => (await db.query('SELECT * FROM attempt ORDER BY id')).rows;

  beforeAll(async () => {
    service = await startTestService({ role: 'api', retentionHours: 24, retentionPurgeBatch: 2, retentionPurgePauseMs: 5 });
    db = await connect(service.databaseUrl);
    keyId = (await db.query('SELECT id FROM api_key LIMIT 1')).rows[0].id;
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
  });

  it('should purge old finished callbacks with their attempts and empty old batches, and touch nothing else', async () => {
    const oldDone = await batch(50);
    const doomed = [await callback(oldDone, 'succeeded', 50), await callback(oldDone, 'failed', 49), await callback(oldDone, 'cancelled', 48, 0)];
    const oldOpen = await batch(null);
    doomed.push(await callback(oldOpen, 'succeeded', 30), await callback(oldOpen, 'failed', 25, 8));
    const kept = [
      await callback(oldOpen, 'pending', 50, 3), // retrying for two days: stays, attempts and all
      await callback(oldOpen, 'in_flight', 40, 1),
    ];
    const recent = await batch(1);
    kept.push(await callback(recent, 'succeeded', 23), await callback(recent, 'failed', 1));
    // Completed long ago but one callback is still recent (a manual retry): the batch stays.
    const retried = await batch(30);
    doomed.push(await callback(retried, 'succeeded', 30));
    kept.push(await callback(retried, 'succeeded', 2));

    const keptAttempts = (await snapshot()).filter((a) => kept.includes(a.callback_id));
    const window = `from=${new Date(Date.now() - 24 * H).toISOString()}&to=${new Date().toISOString()}&bucket=1h`;
    const historyBefore = await service.apiJson(`/v1/history/latency?${window}`);
    expect(historyBefore.items.length).toBeGreaterThan(0);

    const result = await service.app.get(RetentionService).purge();

    expect(result).toEqual({ callbacks: doomed.length, batches: 1, partitions: 0 });
    expect(await ids('callback')).toEqual([...kept].sort());
    expect(await ids('batch')).toEqual([oldOpen, recent, retried].sort());
    expect(await snapshot()).toEqual(keptAttempts);
    const states = (await db.query('SELECT status, lease_owner FROM callback WHERE id = ANY($1::uuid[]) ORDER BY status', [kept])).rows;
    expect(states.map((s) => s.status)).toEqual(['failed', 'in_flight', 'pending', 'succeeded', 'succeeded']);
    expect(await service.apiJson(`/v1/history/latency?${window}`)).toEqual(historyBefore);

    expect(await service.app.get(RetentionService).purge()).toEqual({ callbacks: 0, batches: 0, partitions: 0 });
  });

  it('should delete the attempts of callbacks deleted row by row, and no others (no foreign key: a trigger)', async () => {
    const gone = await batch(50);
    const goneCallbacks = [await callback(gone, 'succeeded', 50, 3), await callback(gone, 'failed', 50, 1)];
    const stays = await batch(50);
    const kept = await callback(stays, 'succeeded', 50, 2);
    const keptAttempts = (await snapshot()).filter((a) => a.callback_id === kept);
    expect(keptAttempts).toHaveLength(2);
    const count = async (callbackIds: string[]) =>
      (await db.query('SELECT count(*)::int AS n FROM attempt WHERE callback_id = ANY($1::uuid[])', [callbackIds])).rows[0].n;
    expect(await count(goneCallbacks)).toBe(4);

    await db.query('DELETE FROM callback WHERE batch_id = $1', [gone]);

    expect(await count(goneCallbacks)).toBe(0);
    expect((await snapshot()).filter((a) => a.callback_id === kept)).toEqual(keptAttempts);
    await db.query('DELETE FROM callback WHERE batch_id = $1', [stays]);
    expect(await count([kept])).toBe(0);
  });

  it('should keep everything when RETENTION_HOURS is 0', async () => {
    const keepAll = await startTestService({ role: 'api', retentionHours: 0 });
    try {
      const kdb = await connect(keepAll.databaseUrl);
      const key = (await kdb.query('SELECT id FROM api_key LIMIT 1')).rows[0].id;
      await kdb.query(`INSERT INTO batch (id, api_key_id, total, completed_at) VALUES (gen_random_uuid(), $1, 0, now() - interval '10 years')`, [key]);
      expect(await keepAll.app.get(RetentionService).purge()).toEqual({ callbacks: 0, batches: 0, partitions: 0 });
      expect((await kdb.query('SELECT count(*)::int AS n FROM batch')).rows[0].n).toBe(1);
      await kdb.end();
    } finally {
      await keepAll.dispose();
    }
  });

  it("should keep a window of seconds with a fractional RETENTION_HOURS, purging on the worker's own schedule: sent callbacks go, an unfinished one stays", async () => {
    // 0.0005 h = 1.8 s; the purge runs every second (a tenth of the window, at least 1 s); finished
    // rows sit in partitions of 10 s (the narrowest), each dropped once wholly past the window
    // attempts' partitions wait for the longest call (HTTP_MAX_TIMEOUT_MS and the lease margin): 3 s here
    const worker = await startTestService({ retentionHours: 0.0005, httpTimeoutMs: 1_000, httpMaxTimeoutMs: 2_000, dispatchLeaseMarginMs: 1_000 });
    const receiver = await Receiver.start({ host: '127.0.0.6' });
    try {
      expect(worker.app.get(AppConfig).retentionPurgeIntervalMs).toBe(1_000);
      const wdb = await connect(worker.databaseUrl);
      // an empty batch completed two hours ago: gone on the schedule too, with no purge() called
      const key = (await wdb.query('SELECT id FROM api_key LIMIT 1')).rows[0].id;
      const {
        rows: [old],
      } = await wdb.query(
        `INSERT INTO batch (id, api_key_id, total, completed_at) VALUES (gen_random_uuid(), $1, 0, now() - interval '2 hours') RETURNING id`,
        [key],
      );
      const sent = await worker.apiJson('/v1/batches', { method: 'POST', json: { callbacks: [{ url: `${receiver.url}/a` }, { url: `${receiver.url}/b` }] } });
      const later = await worker.apiJson('/v1/batches', {
        method: 'POST',
        json: { callbacks: [{ url: `${receiver.url}/c`, runAt: new Date(Date.now() + H).toISOString() }] },
      });
      await waitFor(() => receiver.requests.length === 2);
      const count = async (batchId: string) => (await wdb.query('SELECT count(*)::int AS n FROM callback WHERE batch_id = $1', [batchId])).rows[0].n;
      const finishedAt = Date.now();
      await waitFor(async () => (await count(sent.id)) === 0, 20_000);
      // not before the window ran out, and not long after (the window, a partition's width and an interval)
      expect(Date.now() - finishedAt).toBeGreaterThanOrEqual(1_500);
      expect(Date.now() - finishedAt).toBeLessThan(15_000);
      await waitFor(async () => (await worker.api(`/v1/batches/${sent.id}`)).status === 404, 5_000); // the same pass, after the drops
      expect(await count(later.id)).toBe(1);
      await waitFor(async () => (await wdb.query('SELECT count(*)::int AS n FROM batch WHERE id = $1', [old.id])).rows[0].n === 0, 3_000);
      // their attempts' partitions a little later (the longest call, 3 s here, after the window)
      await waitFor(async () => (await wdb.query('SELECT count(*)::int AS n FROM attempt')).rows[0].n === 0, 15_000);
      await wdb.end();
    } finally {
      await worker.dispose();
      await receiver.close();
    }
  });
});
