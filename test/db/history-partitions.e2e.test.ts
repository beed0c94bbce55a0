import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionName } from '../../src/retention/partition.policy.js';
import { partitionStatements } from '../../src/retention/partition.repository.js';
import { RetentionService } from '../../src/retention/retention.service.js';
import { connect, inTransactionRetryingDeadlocks } from '../support/database.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';
import { dropEmptyAttemptBefore } from '../support/plans.js';

const H = 3_600_000;

/**
 * The history partitioned by when a row finished (ARCHITECTURE.md, "History layout"):
 * retention drops time partitions, and whatever is unfinished is in the queue's
 * partition, out of its reach. A purge run "as of" a later instant drops every
 * partition the test's rows finished in.
 */
describe('history partitions', () => {
  let service: TestService;
  let db: pg.Client;
  let shop: Receiver;

  beforeAll(async () => {
    // a window of an hour: partitions of 6 minutes
    service = await startTestService({ retentionHours: 1, retryDelaysMs: [86_400_000] });
    db = await connect(service.databaseUrl);
    shop = await Receiver.start({ host: '127.0.0.7' });
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
    await shop?.close();
  });

  const partitions = async (table: string) =>
    (await db.query<{ name: string }>(`SELECT inhrelid::regclass::text AS name FROM pg_inherits WHERE inhparent = $1::regclass ORDER BY 1`, [table])).rows.map(
      (r) => r.name,
    );
  const rowOf = async (id: string) =>
    (await db.query(`SELECT status, held, attempts, done_at = 'infinity' AS queued FROM callback WHERE id = $1`, [id])).rows[0];

  it('should drop the partitions of finished rows and keep every unfinished one: due later, retried later, held, waiting on its ordering key', async () => {
    expect((await service.api('/v1/receivers/paused', { method: 'PUT', json: { url: `${shop.url}/paused` } })).status).toBe(201);
    expect((await service.api('/v1/receivers/paused', { method: 'PUT', json: { disabled: true } })).status).toBe(200);
    const tomorrow = new Date(Date.now() + 24 * H).toISOString();
    const res = await service.apiJson('/v1/batches', {
      method: 'POST',
      json: {
        callbacks: [
          { url: `${shop.url}/done`, externalId: 'done' },
          { url: `${shop.url}/later`, runAt: tomorrow, externalId: 'later' },
          { url: `${shop.url}/fails?code=500`, maxAttempts: 3, externalId: 'retried' },
          { receiver: 'paused', externalId: 'held' },
          { url: `${shop.url}/head`, orderingKey: 'k', runAt: tomorrow, externalId: 'head' },
          { url: `${shop.url}/next`, orderingKey: 'k', externalId: 'next' },
        ],
      },
    });
    const ids = Object.fromEntries(
      (await service.apiJson(`/v1/batches/${res.id}/callbacks`)).items.map((c: { id: string; externalId: string }) => [c.externalId, c.id]),
    ) as Record<string, string>;
    await waitFor(async () => (await rowOf(ids.done)).status === 'succeeded' && (await rowOf(ids.retried)).attempts === 1);
    expect((await rowOf(ids.done)).queued).toBe(false); // moved out of the queue when it finished
    const before = await partitions('callback');
    expect(before).toContain('callback_live');

    // As of two hours on, every partition these rows finished (and their attempts started) in is past the window.
    const purged = await service.app.get(RetentionService).purge(new Date(Date.now() + 2 * H));
    expect(purged.partitions).toBeGreaterThan(0);
    expect(await partitions('callback')).not.toEqual(expect.arrayContaining(before.filter((p) => p !== 'callback_live')));
    expect((await service.api(`/v1/callbacks/${ids.done}`)).status).toBe(404);
    expect(await rowOf(ids.later)).toMatchObject({ status: 'pending', queued: true });
    expect(await rowOf(ids.retried)).toMatchObject({ status: 'pending', attempts: 1, queued: true });
    expect(await rowOf(ids.held)).toMatchObject({ status: 'pending', held: true, queued: true });
    expect(await rowOf(ids.head)).toMatchObject({ status: 'pending', queued: true });
    expect(await rowOf(ids.next)).toMatchObject({ status: 'pending', queued: true });

    // The partitions of now are made again (the purge made them as of its own instant), and each kept row is sent.
    await service.app.get(RetentionService).makePartitions(new Date());
    await db.query(`UPDATE callback SET next_attempt_at = now() WHERE id = ANY($1::uuid[])`, [[ids.later, ids.retried, ids.head]]);
    expect((await service.api('/v1/receivers/paused', { method: 'PUT', json: { disabled: false } })).status).toBe(200);
    await service.app.get(RetentionService).purge(); // nothing of the window goes
    await waitFor(async () => {
      const rows = await Promise.all(['later', 'held', 'head', 'next'].map(async (k) => (await rowOf(ids[k])).status));
      return rows.every((s) => s === 'succeeded');
    }, 10_000);
    const paths = shop.requests.map((r) => r.url.split('?')[0]);
    for (const p of ['/later', '/paused', '/head', '/next']) expect(paths.filter((x) => x === p)).toHaveLength(1);
    expect(paths.indexOf('/head')).toBeLessThan(paths.indexOf('/next'));
    expect((await rowOf(ids.retried)).attempts).toBe(2);
  });

  it('should give way when dropping a partition waits for its locks, so nothing queues behind the drop for long, and drop it later', async () => {
    // A drop waiting for `receiver` (a transaction holds it: a write-back, a PUT) queued
    // every claim, ingest and status read behind it: test/db/db-faults.e2e.test.ts.
    const indexes = (await db.query(`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = 'callback'`)).rows;
    const old = Date.UTC(2001, 0, 1);
    const [dropped, leftover] = [partitionName('callback', old), partitionName('callback', old + H)];
    // under the lock of the service's own partition changes (PartitionRepository), so they never meet
    await inTransactionRetryingDeadlocks(db, async () => {
      await db.query(`SELECT pg_advisory_xact_lock(72707371, hashtext('callback'))`);
      for (const from of [old, old + H]) {
        for (const statement of partitionStatements('callback', partitionName('callback', from), from, from + H, indexes)) await db.query(statement.text);
      }
      await db.query(`ALTER TABLE callback DETACH PARTITION ${leftover}`); // as a pass stopped between detach and drop leaves it
    });
    const [holder, probe] = [await connect(service.databaseUrl), await connect(service.databaseUrl)];
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE receiver IN ROW SHARE MODE'); // as a write-back's lockReceivers holds it
      const purge = service.app.get(RetentionService).purge();
      const waits: number[] = [];
      for (let i = 0; i < 5; i++) {
        await new Promise((r) => setTimeout(r, 150));
        const started = Date.now();
        await probe.query('SELECT count(*) FROM receiver'); // as a claim reads it
        waits.push(Date.now() - started);
      }
      await holder.query('COMMIT');
      const result = await purge;
      expect(Math.max(...waits), `probe waits ${waits.join(', ')} ms`).toBeLessThan(600); // a drop's try waits 200 ms at most
      expect(result.partitions).toBeGreaterThanOrEqual(2);
      const { rows } = await db.query(`SELECT relname FROM pg_class WHERE relname = ANY($1::text[])`, [[dropped, leftover]]);
      expect(rows).toEqual([]);
    } finally {
      await holder.end();
      await probe.end();
    }
  });

  it('should keep the latency history of the window exact when older partitions go', async () => {
    // Attempts from two and a half hours ago, in a partition of their own (this fresh database's
    // attempt_before, empty, makes way for it if the test before has not dropped it), beside the window's, sent now.
    const key = (await db.query(`SELECT id FROM api_key LIMIT 1`)).rows[0].id;
    await dropEmptyAttemptBefore(db);
    const indexes = (await db.query(`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = 'attempt'`)).rows;
    const old = Date.now() - 3 * H;
    for (const statement of partitionStatements('attempt', partitionName('attempt', old), old, old + H, indexes)) await db.query(statement.text);
    await db.query(
      `INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, outcome)
       SELECT gen_random_uuid(), $1, 'http://127.0.0.9:9', 1, now() - interval '150 minutes' + g * interval '1 second', 5, 'success' FROM generate_series(1, 40) g`,
      [key],
    );
    const batch = await service.apiJson('/v1/batches', {
      method: 'POST',
      json: { callbacks: Array.from({ length: 30 }, (_, i) => ({ url: `${shop.url}/h${i}` })) },
    });
    await waitFor(async () => (await service.apiJson(`/v1/batches/${batch.id}`)).status === 'completed');
    const history = async (hoursBack: number) => {
      const from = new Date(Date.now() - hoursBack * H).toISOString();
      return (await service.apiJson(`/v1/history/latency?from=${encodeURIComponent(from)}&bucket=1h`)).items as Array<{ start: string; count: number }>;
    };
    const total = (items: Array<{ count: number }>) => items.reduce((n, b) => n + b.count, 0);
    const window = await history(0.9);
    expect(total(await history(3))).toBe(total(window) + 40);
    // From a whole hour, the old attempts' hour is closed and whole: it is stored (latency_rollup), and must go with them.
    const wholeHours = `/v1/history/latency?from=${new Date(Math.floor((Date.now() - 4 * H) / H) * H).toISOString()}&bucket=1h`;
    const storedOld = async () =>
      (await db.query(`SELECT coalesce(sum(count), 0)::int AS n FROM latency_rollup WHERE api_key_id = $1 AND start < now() - interval '2 hours'`, [key]))
        .rows[0].n;
    expect(total((await service.apiJson(wholeHours)).items)).toBe(total(window) + 40);
    expect(await storedOld()).toBe(40);

    const purged = await service.app.get(RetentionService).purge();
    expect(purged.partitions).toBeGreaterThanOrEqual(1);
    expect(await partitions('attempt')).not.toContain(partitionName('attempt', old));
    expect(await history(0.9)).toEqual(window); // the window's buckets, to the attempt
    expect(total(await history(3))).toBe(total(window)); // the old ones went with their partition
    expect(await storedOld()).toBe(0);
    expect(total((await service.apiJson(wholeHours)).items)).toBe(total(window));
    const { rows } = await db.query(`SELECT count(*)::int AS n FROM attempt WHERE callback_id IN (SELECT id FROM callback WHERE batch_id = $1)`, [batch.id]);
    expect(rows[0].n).toBe(30);
  });
});
