import { afterAll, describe, expect, it } from 'vitest';
import { RecoveryService } from '../../src/recoveries/recovery.service.js';
import { TaskRunner } from '../../src/tasks/task.runner.js';
import { useTestDatabase } from '../support/database.js';
import { call, type ServiceProcess } from '../support/process.js';
import { seedFailed, seedPending } from '../support/seed.js';
import { killMidTaskAndResume } from '../support/tasks.js';

/**
 * Tasks whose process is killed (SIGKILL) mid-way, resumed by the next leader: a
 * receiver's disable (test/db/tasks.e2e.test.ts has the task's behaviour) and a
 * recovery (test/db/recoveries.e2e.test.ts).
 */
describe(`${TaskRunner.name} across a crash`, () => {
  const t = useTestDatabase();
  const processes: ServiceProcess[] = [];
  afterAll(async () => {
    for (const p of processes) p.kill('SIGKILL');
  });

  it('should finish a disable whose process was killed mid-way: the leader resumes it', async () => {
    const n = 4000;
    let receiverId = '';
    const { taskId, second } = await killMidTaskAndResume(
      t.url,
      t.db,
      n,
      async (url) => {
        expect((await call(url, '/v1/receivers/crash', { method: 'PUT', json: { url: 'http://127.0.0.65:9/crash' } })).status).toBe(201);
        ({ receiverId } = await seedPending(t.db, 'crash', n));
        const disable = await call(url, '/v1/receivers/crash', { method: 'PUT', json: { disabled: true } });
        expect(disable.body.task).toMatchObject({ status: 'running' });
        return disable.body.task.id as string;
      },
      processes,
    );
    expect((await t.db.query(`SELECT done FROM task WHERE id = $1`, [taskId])).rows[0].done).toBe(n);
    expect(Number((await t.db.query(`SELECT count(*) AS n FROM callback WHERE receiver_id = $1 AND held`, [receiverId])).rows[0].n)).toBe(n);
    await second.stop();
  });
});

describe(`${RecoveryService.name} across a crash`, () => {
  const t = useTestDatabase();
  const processes: ServiceProcess[] = [];
  afterAll(async () => {
    for (const p of processes) p.kill('SIGKILL');
  });

  it('should finish a recovery whose process was killed mid-way: the leader resumes it, each callback requeued once', async () => {
    const n = 4000;
    let receiverId = '';
    const { taskId, second } = await killMidTaskAndResume(
      t.url,
      t.db,
      n,
      async (url) => {
        expect((await call(url, '/v1/receivers/crash', { method: 'PUT', json: { url: 'http://127.0.0.73:9/crash', disabled: true } })).status).toBe(201);
        ({ receiverId } = await seedFailed(t.db, 'crash', n));
        const started = await call(url, '/v1/recoveries', { method: 'POST', json: { receiver: 'crash' } });
        expect(started.body).toMatchObject({ state: 'running', matched: n });
        return started.body.id as string;
      },
      processes,
    );
    expect((await call(second.url, `/v1/recoveries/${taskId}`)).body).toMatchObject({ state: 'done', requeued: n, pending: n, matched: n });
    const { rows } = await t.db.query(`SELECT status, held, count(*)::int AS n FROM callback WHERE receiver_id = $1 GROUP BY 1, 2`, [receiverId]);
    expect(rows).toEqual([{ status: 'pending', held: true, n }]);
    await second.stop();
  });
});
