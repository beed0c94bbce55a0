import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptsSince, batchAttemptRows, batchProgress } from '../../src/queue/batch-attempts.sql.js';
import { WITHOUT_JIT } from '../../src/database/api-database.js';
import { CLOCK_MARGIN_MS } from '../../src/common/clock.js';
import { completeBatches } from '../../src/queue/batch-completion.sql.js';
import { loadConfig } from '../../src/config/app.config.js';
import { dispatchSettings } from '../../src/database/dispatch-database.js';
import type { LocalSettings } from '../../src/database/pg.statements.js';
import { Prisma } from '../../src/generated/prisma/client.js';
import { checkPlan, dropEmptyAttemptBefore, explainStatement, historyPartitions, nodeRowsRead, planDatabase, planNodes } from '../support/plans.js';

/**
 * A batch's attempts read on a history of days (batch-attempts.sql.ts): GET
 * /v1/batches/{id}'s progress, the batch's timeline and batch.completed's span. The
 * history: 90,000 finished callbacks with their attempts over three days before the
 * batches, in the day-wide time partitions a running service keeps. The batches: one
 * of 3,000 callbacks, each with two attempts (one started before the batch's
 * `created_at`, as a worker's clock behind the server's stamps it), and one of 20.
 * What it checks, on whichever server the suite runs on: no partition older than the
 * batch is read, the attempts read are the batch's own, no JIT, and the answers are
 * those of a plain join over the whole history.
 */
const DAY = 86_400_000;
const HISTORY_PER_DAY = 30_000;
const BIG = 3_000;
const SMALL = 20;
/**
 * Rows a read of each batch may read (rowsRead), about twice the most one reads on
 * embedded 18: the big batch's 15,006 (its rows and attempts), the small one's 3,080
 * (its generic plan); the whole history is 90,000 callbacks and their attempts.
 */
const READ_AT_MOST = { big: 30_000, small: 7_000 };

describe('batch attempts plans', () => {
  let db: pg.Client;
  let drop: () => Promise<void>;
  let url: string;
  let server = '';
  const batch: Record<'big' | 'small', { id: string; createdAt: Date }> = {} as never;

  beforeAll(async () => {
    let keys: string[];
    ({ url, drop, db, server, keys } = await planDatabase());
    await dropEmptyAttemptBefore(db); // it makes way for the days before the database was made
    for (const daysAgo of [4, 2, 0]) await historyPartitions(db, DAY, Date.now() - daysAgo * DAY);
    const [key] = keys;
    // the history: a batch of 1,000 a step, each callback finished with one attempt, 2 to 4 days ago
    for (const daysAgo of [4, 3, 2]) {
      await db.query(
        `WITH b AS (
           INSERT INTO batch (id, api_key_id, label, total, created_at, completed_at)
           SELECT gen_random_uuid(), $1, 'history', 1000, now() - $2::int * interval '1 day', now() - $2::int * interval '1 day'
           FROM generate_series(1, $3::int / 1000) RETURNING id
         ), n AS (SELECT id, row_number() OVER () - 1 AS k FROM b),
         c AS (
           INSERT INTO callback (id, batch_id, api_key_id, url, host, method, headers, body, timeout_ms, max_attempts, status, attempts,
                                 next_attempt_at, created_at, completed_at, done_at)
           SELECT gen_random_uuid(), n.id, $1, 'http://127.0.0.1:9/h', 'http://127.0.0.1:9', 'POST', '{}', '{}', 5000, 3, 'succeeded', 1,
                  t.at, t.at, t.at, t.at
           FROM generate_series(0, $3::int - 1) i JOIN n ON n.k = i / 1000
           CROSS JOIN LATERAL (SELECT now() - $2::int * interval '1 day' + i * interval '1 second' AS at) t
           RETURNING id, created_at
         )
         INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, status_code, outcome, worker)
         SELECT id, $1, 'http://127.0.0.1:9', 1, created_at, 12, 200, 'success', 'seed' FROM c`,
        [key, daysAgo, HISTORY_PER_DAY],
      );
    }
    // the batches read: stored 10 minutes ago; each callback's first attempt a 500 started 5 minutes before that
    // (a worker's clock behind the server's), the second a 200 a minute after the batch
    for (const [name, n] of [
      ['big', BIG],
      ['small', SMALL],
    ] as const) {
      const { rows } = await db.query<{ id: string; created_at: Date }>(
        `INSERT INTO batch (id, api_key_id, label, total, created_at, notify_url, notify_host)
         VALUES (gen_random_uuid(), $1, $2, $3, now() - interval '10 minutes', 'http://127.0.0.1:9/done', 'http://127.0.0.1:9') RETURNING id, created_at`,
        [key, name, n],
      );
      batch[name] = { id: rows[0].id, createdAt: rows[0].created_at };
      await db.query(
        `WITH c AS (
           INSERT INTO callback (id, batch_id, api_key_id, url, host, method, headers, body, timeout_ms, max_attempts, status, attempts,
                                 next_attempt_at, created_at, completed_at, done_at)
           SELECT gen_random_uuid(), $2, $1, 'http://127.0.0.1:9/h', 'http://127.0.0.1:9', 'POST', '{}', '{}', 5000, 3, 'succeeded', 2,
                  now(), $3::timestamptz, $3::timestamptz + interval '1 minute', $3::timestamptz + interval '1 minute' + i * interval '1 ms'
           FROM generate_series(1, $4::int) i RETURNING id
         )
         INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, status_code, outcome, worker)
         SELECT c.id, $1, 'http://127.0.0.1:9', a.n, $3::timestamptz + CASE a.n WHEN 1 THEN interval '-5 minutes' ELSE interval '1 minute' END,
                20, CASE a.n WHEN 1 THEN 500 ELSE 200 END, CASE a.n WHEN 1 THEN 'http_error' ELSE 'success' END, 'seed'
         FROM c CROSS JOIN generate_series(1, 2) a(n)`,
        [key, batch[name].id, batch[name].createdAt, n],
      );
    }
    await db.query('VACUUM ANALYZE callback');
    await db.query('VACUUM ANALYZE attempt');
    await db.query('ANALYZE batch');
  }, 180_000);
  afterAll(async () => {
    await db?.end();
    await drop?.();
  });

  /** The history's partitions wholly before `since` (their upper bound at or before it). */
  async function partitionsBefore(since: Date): Promise<Set<string>> {
    const { rows } = await db.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent IN ('callback'::regclass, 'attempt'::regclass)
         AND substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \\(''([^'']+)''\\)')::timestamptz <= $1`,
      [since],
    );
    return new Set(rows.map((r) => r.name));
  }

  /** checkPlan (no JIT, the rows read), and: no partition older than the batch read, at most `attemptsAtMost` attempt rows. */
  async function check(name: string, statement: Prisma.Sql, settings: LocalSettings, which: 'big' | 'small', attemptsAtMost: number): Promise<void> {
    const old = await partitionsBefore(new Date(batch[which].createdAt.getTime() - CLOCK_MARGIN_MS));
    expect(old.size, 'the history has partitions older than the batches').toBeGreaterThanOrEqual(4);
    const runs = await explainStatement(url, statement, settings);
    checkPlan(name, runs, server, { uses: [], maxRows: READ_AT_MOST[which], jitOff: true });
    for (const run of runs) {
      const where = `${name} (${run.mode}) on ${server}`;
      const nodes = planNodes(run.Plan);
      const older = nodes.filter((n) => n['Relation Name'] && old.has(n['Relation Name']) && (n['Actual Loops'] ?? 0) > 0).map((n) => n['Relation Name']);
      expect(older, `${where}: partitions older than the batch read`).toEqual([]);
      const read = nodes.filter((n) => n['Relation Name']?.startsWith('attempt')).reduce((sum, n) => sum + nodeRowsRead(n), 0);
      expect(read, `${where}: attempt rows read`).toBeLessThanOrEqual(attemptsAtMost);
    }
  }

  /** The answer of a plain join over the whole history, which the bounded read must equal. */
  async function plainSpan(batchId: string) {
    const { rows } = await db.query<{ first: Date; last: Date; n: number }>(
      `SELECT min(a.started_at) AS first, max(a.started_at + a.duration_ms * interval '1 millisecond') AS last, count(*)::int AS n
       FROM callback c JOIN attempt a ON a.callback_id = c.id WHERE c.batch_id = $1`,
      [batchId],
    );
    return rows[0];
  }

  it.each(['big', 'small'] as const)("should read a %s batch's progress from its own partitions and attempts, as a plain join answers", async (which) => {
    const { id, createdAt } = batch[which];
    const n = which === 'big' ? BIG : SMALL;
    const statement = batchProgress(id, createdAt);
    await check(`batchProgress (${which})`, statement, WITHOUT_JIT, which, 2 * n + 10);
    const { rows } = await db.query(statement.text, statement.values);
    const plain = await plainSpan(id);
    expect(plain.first.getTime(), 'an attempt started before the batch (a worker clock behind) counts').toBeLessThan(createdAt.getTime());
    expect(rows[0]).toEqual({ counts: { succeeded: n }, firstStartAt: plain.first, lastEndAt: plain.last });
  });

  it("should read a batch's timeline from its own partitions and attempts", async () => {
    const { id, createdAt } = batch.big;
    const statement = batchAttemptRows(Prisma.sql`${id}::uuid`, attemptsSince(createdAt));
    await check('batchAttemptRows (big)', statement, WITHOUT_JIT, 'big', 2 * BIG + 10);
    const { rows } = await db.query<{ number: number }>(statement.text, statement.values);
    expect(rows.length).toBe((await plainSpan(id)).n);
    expect(rows.slice(0, 2).map((r) => r.number)).toEqual([1, 2]);
  });

  it("should read batch.completed's span from the batch's own partitions and attempts, in the worker's completion", async () => {
    const statement = completeBatches([batch.big.id], { timeoutMs: 15_000, maxAttempts: 8 });
    await check('completeBatches (told, big)', statement, dispatchSettings(loadConfig({})), 'big', 2 * BIG + 10);
  });
});
