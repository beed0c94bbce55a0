import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, connectPoolerConsole, inTransactionRetryingDeadlocks, useTestDatabase } from '../support/database.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { jsonOf, sharedService, startTestService, waitFor, type TestService } from '../support/service.js';

describe('statement and lock timeouts on every session', () => {
  const t = useTestDatabase();
  /** The API-role service of the two lock-timeout tests: one for both, started by the first of them that runs, stopped after the file's tests. */
  const lockTimed = sharedService({ role: 'api', databaseLockTimeoutMs: 300 }, () => t.url);
  const lockTimedService = lockTimed.get;
  afterAll(lockTimed.dispose);

  it('should answer 503 db_timeout, saying which, when a statement waits for a lock past DATABASE_LOCK_TIMEOUT_MS, and change nothing', async () => {
    const service = await lockTimedService();
    const locker = await connect(t.url);
    try {
      expect((await service.api('/v1/receivers/locked', { method: 'PUT', json: { url: 'http://127.0.0.77:9/x' } })).status).toBe(201);
      await locker.query('BEGIN');
      await locker.query(`SELECT 1 FROM receiver WHERE name = 'locked' FOR UPDATE`);
      const started = Date.now();
      const res = await service.api('/v1/receivers/locked', { method: 'PUT', json: { disabled: true } });
      expect(Date.now() - started).toBeLessThan(2000);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(await jsonOf(res)).toMatchObject({ code: 'db_timeout', message: expect.stringMatching(/DATABASE_LOCK_TIMEOUT_MS/) });
      await locker.query('ROLLBACK');
      expect((await service.apiJson('/v1/receivers/locked')).disabled).toBe(false);
      const { rows } = await locker.query(`SELECT current_setting('lock_timeout') AS l, current_setting('statement_timeout') AS s`);
      expect(rows[0]).toEqual({ l: '0', s: '0' }); // the server's own defaults: the service set its own sessions only
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined); // a failure above leaves the next test no lock held
      await locker.end();
    }
  });
  it('should answer 503 db_timeout on the routes the Prisma client serves too (its errors carry the Postgres code only in meta), and store nothing', async () => {
    // Behind a transaction pooler Prisma's single statements run with the database's
    // (or role's) own timeouts, which docs/operations.md says to set there: set as told,
    // on server sessions opened from now on (RECONNECT: the pooler's sessions open again
    // once released, the service's too).
    const pooler = await connectPoolerConsole();
    const database = new URL(t.directUrl).pathname.slice(1);
    if (pooler) {
      await t.db.query(`ALTER DATABASE ${database} SET lock_timeout = '300ms'`);
      await pooler.query(`RECONNECT ${database}`);
    }
    const service = await lockTimedService();
    const locker = await connect(t.url);
    try {
      expect((await service.api('/v1/event-types/order.paid', { method: 'PUT', json: {} })).status).toBe(201);
      expect((await service.api('/v1/receivers/shop', { method: 'PUT', json: { url: 'http://127.0.0.77:9/x', eventTypes: ['order.paid'] } })).status).toBe(201);
      const batch = await service.apiJson('/v1/batches', { method: 'POST', json: { callbacks: [{ url: 'http://127.0.0.77:9/y' }] } });
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE batch, callback, receiver, event, event_type IN ACCESS EXCLUSIVE MODE');
      const requests: Array<[string, string, unknown?]> = [
        ['GET', '/v1/batches?limit=1'],
        ['GET', `/v1/batches/${batch.id}`],
        ['GET', `/v1/batches/${batch.id}/callbacks`],
        ['GET', '/v1/callbacks?limit=1'],
        ['GET', '/v1/receivers/shop'],
        ['GET', '/v1/events?limit=1'],
        ['POST', '/v1/events', { type: 'order.paid', payload: { n: 1 }, id: 'evt-locked' }],
      ];
      for (const [method, path, json] of requests) {
        const res = await service.api(path, { method, ...(json !== undefined && { json }) });
        expect(res.status, `${method} ${path}: ${await res.clone().text()}`).toBe(503);
        expect(res.headers.get('retry-after')).toBe('1');
        expect(await jsonOf(res), `${method} ${path}`).toMatchObject({ code: 'db_timeout', message: expect.stringMatching(/DATABASE_LOCK_TIMEOUT_MS/) });
      }
      await locker.query('ROLLBACK');
      expect((await locker.query(`SELECT count(*)::int AS n FROM event WHERE event_id = 'evt-locked'`)).rows[0].n).toBe(0);
      expect((await service.api('/v1/events?limit=1')).status).toBe(200);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
      if (pooler) {
        await t.db.query(`ALTER DATABASE ${database} RESET lock_timeout`);
        await pooler.query(`RECONNECT ${database}`);
        await pooler.end();
      }
    }
  });

  it(
    'should answer 503 not_ready, not 500, when the connection a request holds stops answering (cut off without a reset), after the statement timeout and 5 s',
    { timeout: 60_000 },
    async () => {
      const target = new URL(t.directUrl);
      const proxy = await FaultProxy.start({ host: target.hostname, port: Number(target.port) }, '127.0.0.73');
      const service = await startTestService({ role: 'api', databaseStatementTimeoutMs: 1000 }, proxy.urlFor(t.directUrl));
      try {
        // idle connections in the pools, so the requests below take one that then goes silent
        for (const path of ['/v1/batches?limit=1', '/v1/callbacks?limit=1']) expect((await service.api(path)).status).toBe(200);
        proxy.set({ kind: 'blackhole' });
        const started = Date.now();
        const answers = await Promise.all(['/v1/batches?limit=1', '/v1/callbacks?limit=1'].map((path) => service.api(path)));
        for (const res of answers) {
          expect(res.status, await res.clone().text()).toBe(503);
          expect(await jsonOf(res)).toMatchObject({ code: 'not_ready' });
        }
        expect(Date.now() - started).toBeLessThan(15_000);
        proxy.set({ kind: 'pass' });
        await waitFor(async () => (await service.api('/v1/batches?limit=1')).status === 200, 20_000, 250);
      } finally {
        proxy.set({ kind: 'pass' });
        await service.stop();
        await proxy.close();
      }
    },
  );
});

/**
 * Postgres ending a request's transaction to resolve a conflict (a deadlock, 40P01; a
 * row moved to another partition of `callback` under it, 40001), provoked for real
 * with a session of the test's own: a statement alone is run again (the ingest, a
 * cancel), anything else answers 503 `db_conflict` with Retry-After; never a 500, and
 * nothing stored twice.
 */
describe('deadlocks and concurrent updates', () => {
  const t = useTestDatabase();
  let service: TestService;
  let locker: pg.Client;
  beforeAll(async () => {
    service = await startTestService({}, t.url);
    locker = await connect(t.url);
  });
  afterAll(async () => {
    await locker?.query('ROLLBACK').catch(() => undefined);
    await locker?.end();
    await service?.stop();
  });

  const deadlocks = async () => (await locker.query('SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()')).rows[0].n as number;
  /** Whether a backend other than the locker waits for a lock in a statement whose text has `text`. */
  const waiting = async (text: string) =>
    // (the activity view is read once per transaction unless its snapshot is cleared: the locker is in one)
    (await locker.query('SELECT pg_stat_clear_snapshot()')) &&
    (
      await locker.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND wait_event_type = 'Lock' AND strpos(query, $1) > 0`,
        [text],
      )
    ).rows[0].n === 1;
  /** A callback that stays pending (due in an hour), so the worker leaves it alone. */
  const parked = async () => {
    const res = await service.api('/v1/batches', {
      method: 'POST',
      json: { callbacks: [{ url: 'http://127.0.0.79:9/parked', runAt: new Date(Date.now() + 3_600_000).toISOString() }] },
    });
    expect(res.status).toBe(202);
    return ((await res.json()) as { callbacks: Array<{ id: string }> }).callbacks[0].id;
  };
  const finish = (id: string) =>
    locker.query("UPDATE callback SET status = 'failed', completed_at = now(), done_at = now(), last_error = 'by the test' WHERE id = $1", [id]);

  it('should retry an ingest that Postgres ended to break a deadlock, and store its batch once', async () => {
    for (const name of ['first', 'second']) {
      expect((await service.api(`/v1/receivers/${name}`, { method: 'PUT', json: { url: `http://127.0.0.79:9/${name}` } })).status).toBe(201);
    }
    const [low, high] = (await locker.query("SELECT id FROM receiver WHERE name IN ('first', 'second') ORDER BY id")).rows.map((r) => r.id as string);
    const before = await deadlocks();
    await locker.query('BEGIN');
    await locker.query("SET LOCAL deadlock_timeout = '60s'"); // so the ingest's check (after 1 s) finds the cycle and ends the ingest
    await locker.query('SELECT 1 FROM receiver WHERE id = $1 FOR UPDATE', [high]);
    const answer = service.api('/v1/batches', {
      method: 'POST',
      headers: { 'idempotency-key': 'deadlocked' },
      json: { label: 'deadlocked', callbacks: [{ receiver: 'first' }, { receiver: 'second' }] },
    });
    // the ingest holds `low` FOR SHARE and waits for `high`; taking `low` closes the cycle
    await waitFor(() => waiting('INSERT INTO batch'), 5_000);
    await locker.query('SELECT 1 FROM receiver WHERE id = $1 FOR UPDATE', [low]);
    await locker.query('COMMIT');
    const res = await answer;
    expect(res.status, await res.clone().text()).toBe(202);
    const { id, callbacks } = (await res.json()) as { id: string; callbacks: Array<{ id: string }> };
    expect(callbacks).toHaveLength(2);
    // a real deadlock, counted by the server: a backend left idle (a pooler's) reports its counts within 10 s
    await waitFor(async () => (await deadlocks()) > before, 15_000);
    const stored = await locker.query(
      "SELECT b.id, (SELECT count(*)::int FROM callback c WHERE c.batch_id = b.id) AS n FROM batch b WHERE b.label = 'deadlocked'",
    );
    expect(stored.rows).toEqual([{ id, n: 2 }]);
    // the replay answers the same batch
    const replay = await service.api('/v1/batches', {
      method: 'POST',
      headers: { 'idempotency-key': 'deadlocked' },
      json: { label: 'deadlocked', callbacks: [{ receiver: 'first' }, { receiver: 'second' }] },
    });
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(((await replay.json()) as { id: string }).id).toBe(id);
  });

  it('should drop a detached history partition without waiting for `receiver`, beside an ingest that holds it', async () => {
    // What ended a steady benchmark's POST /v1/batches with a 500 (bench/README.md,
    // 2026-12-03 C2): DROP TABLE of a detached partition of `callback` took ACCESS
    // EXCLUSIVE on the tables its foreign keys named, `batch` and `receiver`, and an ingest
    // holding `batch` and waiting for `receiver` closed a cycle with it, which Postgres ended
    // as a deadlock. The time partitions have no foreign keys now (migrations
    // callback_batch_no_fkey, callback_receiver_fkey_live): the drop takes no lock on
    // `receiver`, so neither a receiver's row held nor an ingest queued behind it holds it up.
    // A detached partition, as retention leaves it before its drop; made under the lock the
    // service's own partition changes take (PartitionRepository), so they never meet.
    await inTransactionRetryingDeadlocks(locker, async () => {
      await locker.query("SELECT pg_advisory_xact_lock(72707371, hashtext('callback'))");
      await locker.query('CREATE TABLE callback_zz (LIKE callback INCLUDING DEFAULTS INCLUDING CONSTRAINTS)');
      await locker.query("ALTER TABLE callback ATTACH PARTITION callback_zz FOR VALUES FROM ('2100-01-01') TO ('2100-01-02')");
      await locker.query('ALTER TABLE callback DETACH PARTITION callback_zz');
    });
    expect((await service.api('/v1/receivers/held', { method: 'PUT', json: { url: 'http://127.0.0.79:9/held' } })).status).toBe(201);
    await parked(); // its destination's secret made: the ingest below goes straight to its insert
    const dropper = await connect(t.url);
    try {
      const before = await deadlocks();
      // a receiver's row held (a PUT, a write-back), and an ingest naming it queued behind
      await locker.query('BEGIN');
      await locker.query("SELECT 1 FROM receiver WHERE name = 'held' FOR UPDATE");
      const answer = service.api('/v1/batches', { method: 'POST', json: { label: 'beside a drop', callbacks: [{ receiver: 'held' }] } });
      await waitFor(() => waiting('INSERT INTO batch'), 5_000);
      // the drop goes through meanwhile (with a foreign key on the partition, it queued for `receiver` behind them)
      await dropper.query("SET lock_timeout = '3s'");
      await dropper.query('DROP TABLE callback_zz');
      await locker.query('COMMIT');
      const res = await answer;
      expect(res.status, await res.clone().text()).toBe(202);
      await new Promise((resolve) => setTimeout(resolve, 2_000)); // a server counts a deadlock in pg_stat_database within a second or so
      expect(await deadlocks()).toBe(before);
      const { id } = (await res.json()) as { id: string };
      const stored = await locker.query(
        "SELECT b.id, (SELECT count(*)::int FROM callback c WHERE c.batch_id = b.id) AS n FROM batch b WHERE b.label = 'beside a drop'",
      );
      expect(stored.rows).toEqual([{ id, n: 1 }]);
    } finally {
      await locker.query('ROLLBACK'); // a failure above leaves the next tests a locker outside any transaction
      await dropper.query('DROP TABLE IF EXISTS callback_zz');
      await dropper.end();
    }
  });

  it('should run a cancel again when its row moved to another partition under it, and answer as for the row it finds', async () => {
    const id = await parked();
    await locker.query('BEGIN');
    await finish(id); // moves the row from callback_live to a history partition, at commit
    const answer = service.api(`/v1/callbacks/${id}/cancel`, { method: 'POST' });
    await waitFor(() => waiting('UPDATE callback SET status'), 5_000);
    await locker.query('COMMIT');
    const res = await answer;
    expect(res.status, await res.clone().text()).toBe(409); // failed meanwhile: cannot be cancelled
    expect(await jsonOf(res)).toMatchObject({ code: 'conflict', details: { status: 'failed' } });
    expect((await locker.query('SELECT status, last_error FROM callback WHERE id = $1', [id])).rows).toEqual([{ status: 'failed', last_error: 'by the test' }]);
  });

  it('should answer 503 db_conflict with Retry-After, not 500, when a retry in a transaction meets its row moved under it, and change nothing', async () => {
    const id = await parked();
    await finish(id);
    await locker.query('BEGIN');
    // a concurrent requeue: back to the queue's partition, at commit
    await locker.query(
      "UPDATE callback SET status = 'pending', completed_at = NULL, done_at = 'infinity', next_attempt_at = now() + interval '1 hour' WHERE id = $1",
      [id],
    );
    const answer = service.api(`/v1/callbacks/${id}/retry`, { method: 'POST' });
    await waitFor(() => waiting('UPDATE callback'), 5_000);
    await locker.query('COMMIT');
    const res = await answer;
    expect(res.status, await res.clone().text()).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await jsonOf(res)).toMatchObject({ code: 'db_conflict', message: expect.stringMatching(/changed concurrently/) });
    // as the concurrent requeue left it (due in an hour): the retry's own change (due now) is not there
    const { rows } = await locker.query("SELECT status, next_attempt_at > now() + interval '50 minutes' AS later FROM callback WHERE id = $1", [id]);
    expect(rows).toEqual([{ status: 'pending', later: true }]);
    // asked again, as Retry-After says: a pending callback cannot be retried
    expect((await service.api(`/v1/callbacks/${id}/retry`, { method: 'POST' })).status).toBe(409);
  });
});
