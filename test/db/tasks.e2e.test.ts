import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClaimRepository } from '../../src/dispatch/claim.repository.js';
import { TaskRepository } from '../../src/tasks/task.repository.js';
import { connect, useTestDatabase } from '../support/database.js';
import { seedPending } from '../support/seed.js';
import { jsonOf, startTestService, waitFor, waitForLockWaiter, type TestService } from '../support/service.js';

/**
 * Rows of a seeded backlog: more than the largest chunk (800 rows), so each task takes
 * several chunks, and with TASK_INLINE_MS=0 (one chunk in the request, 200 rows the
 * first) is still running when its request answers. The runner rests between chunks,
 * so a backlog's time grows with its rows: on a loaded machine behind PgBouncer,
 * 12,000 rows (three tasks of 4,000) took over a minute.
 */
const SEEDED = 1200;

describe('tasks: work on a whole backlog in chunks', () => {
  const t = useTestDatabase();
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ dispatchPollMs: 100, taskInlineMs: 0 }, t.url);
  });
  afterAll(async () => {
    await service?.stop();
  });

  const put = async (name: string, body: Record<string, unknown>) => {
    const started = performance.now();
    const res = await service.api(`/v1/receivers/${name}`, { method: 'PUT', json: body });
    return { ms: performance.now() - started, status: res.status, body: await jsonOf(res) };
  };
  const task = async (id: string) => service.apiJson(`/v1/tasks/${id}`);
  const finished = (id: string, timeoutMs = 300_000) =>
    waitFor(
      async () => {
        const s = await task(id);
        return s.status === 'finished' ? s : undefined;
      },
      timeoutMs,
      200,
    );
  const count = async (sql: string, params: unknown[] = []) => Number((await t.db.query(sql, params)).rows[0].n);

  // The same at scale (100,000 rows, requests timed, locks sampled, other traffic measured): test/slow/receiver-backlog.test.ts.
  it('should disable, enable and delete a receiver through tasks that hold, release and cancel its whole backlog', async () => {
    const n = SEEDED;
    expect((await put('big', { url: 'http://127.0.0.62:9/big' })).status).toBe(201);
    const { receiverId } = await seedPending(t.db, 'big', n);

    // disable: answered with the flag set and the task under way (more rows than its inline time holds)
    const disable = await put('big', { disabled: true });
    expect(disable.status).toBe(200);
    expect(disable.body).toMatchObject({ disabled: true, task: { kind: 'receiver.disable', status: 'running' } });
    const progress = await service.apiJson('/v1/receivers/big');
    expect(progress.task).toMatchObject({ id: disable.body.task.id });
    const held = await finished(disable.body.task.id);
    expect(held.done).toBe(n);
    expect(await count(`SELECT count(*) AS n FROM callback WHERE receiver_id = $1 AND held`, [receiverId])).toBe(n);

    // enable: the same, back
    const enable = await put('big', { disabled: false });
    expect(enable.body).toMatchObject({ disabled: false, task: { kind: 'receiver.enable' } });
    expect((await finished(enable.body.task.id)).done).toBe(n);
    expect(await count(`SELECT count(*) AS n FROM callback WHERE receiver_id = $1 AND held`, [receiverId])).toBe(0);
    // released rows are due exactly as stored (an hour from the seeding), not now
    expect(await count(`SELECT count(*) AS n FROM callback WHERE receiver_id = $1 AND next_attempt_at < now() + interval '30 minutes'`, [receiverId])).toBe(0);

    // delete: gone from the API at once (its name free again), its callbacks cancelled behind it
    const deleted = await service.apiJson('/v1/receivers/big', { method: 'DELETE' });
    expect(deleted).toMatchObject({ name: 'big', deleted: true, task: { kind: 'receiver.delete', status: 'running' } });
    expect((await service.api('/v1/receivers/big')).status).toBe(404);
    const again = await put('big', { url: 'http://127.0.0.62:9/big-again' });
    expect(again.status).toBe(201);
    expect(again.body.task).toBeNull();
    const stored = await service.api('/v1/batches', { method: 'POST', json: { callbacks: [{ receiver: 'big', body: '{}' }] } });
    expect(stored.status).toBe(202); // for the new receiver of that name, not the one being deleted
    const cancelled = await finished(deleted.task.id);
    expect(cancelled.done).toBe(n);
    expect(await count(`SELECT count(*) AS n FROM receiver WHERE id = $1`, [receiverId])).toBe(0);
    expect(
      await count(
        `SELECT count(*) AS n FROM callback WHERE status = 'cancelled' AND receiver_id IS NULL AND last_error LIKE 'cancelled: its receiver was deleted'`,
      ),
    ).toBe(n);
  });

  it('should retry a large batch in chunks, each callback once, and say how far it got', async () => {
    expect((await put('retry', { url: 'http://127.0.0.64:9/retry' })).status).toBe(201);
    const { batchId } = await seedPending(t.db, 'retry', SEEDED);
    await t.db.query(`UPDATE callback SET status = 'failed', completed_at = now() - interval '1 minute', attempts = 3 WHERE batch_id = $1`, [batchId]);
    await t.db.query(`UPDATE receiver SET disabled = true, disabled_at = now() WHERE name = 'retry'`); // held when retried: nothing is sent
    const res = await service.api(`/v1/batches/${batchId}/retry`, { method: 'POST' });
    expect(res.status).toBe(202);
    const body = await jsonOf(res);
    let done = body.retried;
    if (body.task) done = (await finished(body.task.id)).done;
    expect(done).toBe(SEEDED);
    expect(
      (await t.db.query(`SELECT status, held, max_attempts, count(*)::int AS n FROM callback WHERE batch_id = $1 GROUP BY 1, 2, 3`, [batchId])).rows,
    ).toEqual([{ status: 'pending', held: true, max_attempts: 4, n: SEEDED }]);
  });

  it('should 404 a task that does not exist, or not for this key', async () => {
    expect((await service.api('/v1/tasks/00000000-0000-7000-8000-000000000000')).status).toBe(404);
    expect((await service.api('/v1/tasks/nope')).status).toBe(404);
  });
});

describe(`${ClaimRepository.name} and a receiver just disabled`, () => {
  const t = useTestDatabase();
  let api: TestService;
  beforeAll(async () => {
    api = await startTestService({ role: 'api', hostMaxInFlight: 1000 }, t.url); // no worker: only this test claims
  });
  afterAll(async () => {
    await api?.stop();
  });

  it('should keep its rows out of every claim before its task reaches them', async () => {
    expect((await api.api('/v1/receivers/quick', { method: 'PUT', json: { url: 'http://127.0.0.63:9/quick' } })).status).toBe(201);
    const { receiverId } = await seedPending(t.db, 'quick', 50, '-1 second');
    const claims = api.app.get(ClaimRepository);
    // the flag alone, as the PUT commits it before its task's first chunk
    await t.db.query(`UPDATE receiver SET disabled = true, disabled_at = now() WHERE id = $1`, [receiverId]);
    expect(await claims.claimDue('test', 100, 1000, [])).toEqual([]);
    await t.db.query(`UPDATE receiver SET disabled = false, disabled_at = NULL WHERE id = $1`, [receiverId]);
    expect(await claims.claimDue('test', 100, 1000, [])).toHaveLength(50);
  });
});

describe(`${TaskRepository.name} and a write-back moving the receiver's rows`, () => {
  const t = useTestDatabase();
  let api: TestService;
  beforeAll(async () => {
    api = await startTestService({ role: 'api' }, t.url); // no worker: this test is the only write-back
  });
  afterAll(async () => {
    await api?.stop();
  });

  it("should run a disable's chunk that waited for the write-back, over the rows it moved", async () => {
    expect((await api.api('/v1/receivers/moving', { method: 'PUT', json: { url: 'http://127.0.0.64:9/moving' } })).status).toBe(201);
    const { receiverId } = await seedPending(t.db, 'moving', 3);
    const ids = (await t.db.query<{ id: string }>('SELECT id FROM callback WHERE receiver_id = $1 ORDER BY id', [receiverId])).rows.map((r) => r.id);
    const {
      rows: [{ key }],
    } = await t.db.query(`SELECT api_key_id AS key FROM receiver WHERE id = $1`, [receiverId]);
    await t.db.query(`UPDATE receiver SET disabled = true, disabled_at = now() WHERE id = $1`, [receiverId]);
    const {
      rows: [{ id: taskId }],
    } = await t.db.query(`INSERT INTO task (id, api_key_id, kind, receiver_id) VALUES (gen_random_uuid(), $1, 'receiver.disable', $2) RETURNING id`, [
      key,
      receiverId,
    ]);
    // A write-back, as recordOutcomes runs one: the receiver locked first, then one of its rows finished (moved into its time partition).
    const writeBack = await connect(t.directUrl);
    try {
      await writeBack.query('BEGIN');
      await writeBack.query('SELECT 1 FROM receiver WHERE id = $1 FOR NO KEY UPDATE', [receiverId]);
      await writeBack.query(`UPDATE callback SET status = 'succeeded', attempts = 1, completed_at = now(), done_at = now() WHERE id = $1`, [ids[0]]);
      // the chunk's statement starts (its snapshot with the row still in callback_live) and waits for the receiver
      const chunk = api.app.get(TaskRepository).runChunk(taskId, 400);
      await waitForLockWaiter(t.db, 'FOR SHARE', 10_000, 10);
      await writeBack.query('COMMIT');
      // Its update met the moved row: Postgres failed it (40001), and the chunk ran again from where the rows now are.
      expect(await chunk).toMatchObject({ ran: true, changed: 2 });
    } finally {
      await writeBack.end();
    }
    expect((await t.db.query('SELECT id, status, held FROM callback WHERE receiver_id = $1 ORDER BY id', [receiverId])).rows).toEqual([
      { id: ids[0], status: 'succeeded', held: false },
      { id: ids[1], status: 'pending', held: true },
      { id: ids[2], status: 'pending', held: true },
    ]);
  });
});
