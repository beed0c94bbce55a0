import type pg from 'pg';
import { expect } from 'vitest';
import { spawnService, type ServiceProcess } from './process.js';
import { waitFor } from './service.js';

/**
 * A task (src/tasks) started through one service process that is then SIGKILLed
 * mid-way, and finished by the maintenance leader of a second one. `start` makes the
 * task through the first process's API (at `url`) and answers its id; the request runs
 * one chunk of it (TASK_INLINE_MS=0), and a task idle for a second is the leader's to
 * resume (TASK_RESUME_AFTER_MS). Checks that the task was still running at the kill,
 * with fewer than `rows` done, and that the second process says it resumed it; answers
 * the second process (the caller stops it) once the task is finished.
 */
export async function killMidTaskAndResume(
  databaseUrl: string,
  db: pg.Client,
  rows: number,
  start: (url: string) => Promise<string>,
  processes: ServiceProcess[],
): Promise<{ taskId: string; second: ServiceProcess }> {
  const env = { DATABASE_URL: databaseUrl, DISPATCH_POLL_MS: '200', TASK_INLINE_MS: '0', TASK_RESUME_AFTER_MS: '1000' };
  const task = async (id: string) => (await db.query<{ status: string; done: number }>(`SELECT status, done FROM task WHERE id = $1`, [id])).rows[0];
  const first = await spawnService(env);
  processes.push(first);
  const taskId = await start(first.url);
  first.kill('SIGKILL');
  await first.exited;
  const stalled = await task(taskId);
  expect(stalled.status).toBe('running');
  expect(stalled.done).toBeLessThan(rows);

  const second = await spawnService(env);
  processes.push(second);
  await waitFor(async () => (await task(taskId)).status === 'finished', 60_000, 200);
  expect(second.output()).toMatch(/resuming 1 task/);
  return { taskId, second };
}
