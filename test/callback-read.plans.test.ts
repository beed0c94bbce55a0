import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callbacksByIdSql } from '../src/callbacks/callback.repository.js';
import { HISTORY_TABLES, partitionName, partitionsToMake } from '../src/retention/partition.policy.js';
import { partitionBounds, partitionsOfSql, partitionStatements, type PartitionRow } from '../src/retention/partition.repository.js';
import { explainStatement, planDatabase, planNodes } from './support/plans.js';

const DAY = 86_400_000;
const DAYS = 12;

/** A UUIDv7 of the time `ms` (the service's generator never goes back in time, so it cannot make old ones). */
const v7At = (ms: number) => {
  const h = ms.toString(16).padStart(12, '0') + '7' + crypto.randomUUID().replace(/-/g, '').slice(13, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
};

/**
 * A read by id (GET /v1/callbacks/:id) over a history of DAYS daily partitions: the
 * UUIDv7 id's time bounds the partitions read from below, so a callback made two days
 * ago is looked for in the last three days' partitions and the queue's, not in all of
 * them; an id of another version is looked for everywhere, and found.
 */
describe('read by id plans', () => {
  let db: pg.Client;
  let drop: () => Promise<void>;
  let url: string;
  let key: string;
  const made: Record<number, string> = {};
  let handMade = '';

  beforeAll(async () => {
    let keys: string[];
    ({ url, drop, db, keys } = await planDatabase());
    key = keys[0];
    const now = Date.now();
    // The daily partitions of the last DAYS days, as a service keeping them would have made them day by day.
    for (const { table } of HISTORY_TABLES) {
      const statement = partitionsOfSql(table);
      const indexes = (await db.query(`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = $1`, [table])).rows;
      for (let d = DAYS; d > 0; d--) {
        const existing = (await db.query<PartitionRow>(statement.text, statement.values)).rows.map(partitionBounds);
        for (const { from, to } of partitionsToMake(existing, now - d * DAY, DAY))
          for (const st of partitionStatements(table, partitionName(table, from), from, to, indexes)) await db.query(st.text);
      }
    }
    const batch = (await db.query<{ id: string }>(`INSERT INTO batch (id, api_key_id, total) VALUES (gen_random_uuid(), $1, 0) RETURNING id`, [key])).rows[0]
      .id;
    // One finished callback made each day (finished a minute later, its attempt at once), 2,000 more each day beside it.
    for (let d = 0; d < DAYS; d++) {
      const at = now - d * DAY - 3_600_000;
      made[d] = v7At(at);
      handMade = d === 5 ? '0190a1b2-c3d4-4e5f-8a6b-7c8d9e0f1a2b' : handMade;
      const ids = [made[d], ...(d === 5 ? [handMade] : []), ...Array.from({ length: 2000 }, () => crypto.randomUUID())];
      await db.query(
        `WITH c AS (
           INSERT INTO callback (id, batch_id, api_key_id, url, host, method, timeout_ms, max_attempts, status, attempts,
                                 next_attempt_at, created_at, completed_at, done_at)
           SELECT id, $2, $3, 'http://127.0.0.1:9/h', 'http://127.0.0.1:9', 'POST', 1000, 1, 'succeeded', 1,
                  $4, $4, $4::timestamptz + interval '1 minute', $4::timestamptz + interval '1 minute'
           FROM unnest($1::uuid[]) AS id RETURNING id
         )
         INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, outcome)
         SELECT id, $3, 'http://127.0.0.1:9', 1, $4, 5, 'success' FROM c`,
        [ids, batch, key, new Date(at)],
      );
    }
    await db.query('ANALYZE callback');
    await db.query('ANALYZE attempt');
  });
  afterAll(async () => {
    await db?.end();
    await drop?.();
  });

  /** The history partitions (not the queue's) the statement's run read, by table. */
  const partitionsRead = (plan: Parameters<typeof planNodes>[0], table: string) =>
    planNodes(plan)
      .filter((n) => n['Relation Name']?.startsWith(`${table}_2`) && (n['Actual Loops'] ?? 0) > 0)
      .map((n) => n['Relation Name']!)
      .sort();

  it('should find a callback with its attempt, reading only the partitions from its id time on', async () => {
    const statement = callbacksByIdSql([{ apiKeyId: key, id: made[2] }]);
    const { rows } = await db.query(statement.text, statement.values);
    expect(rows.map((r) => [r.id, r.attemptRows.length])).toEqual([[made[2], 1]]);
    for (const run of await explainStatement(url, statement)) {
      for (const table of ['callback', 'attempt']) {
        const read = partitionsRead(run.Plan, table);
        expect(read.length, `${run.mode}: ${table} partitions read ${read.join(' ')}`).toBeGreaterThan(0);
        expect(read.length, `${run.mode}: ${table} partitions read ${read.join(' ')}`).toBeLessThanOrEqual(5);
      }
    }
  });

  it('should find callbacks of any day in one statement, and one whose id is not a UUIDv7 by reading every partition', async () => {
    const keys = [...Object.values(made), handMade].map((id) => ({ apiKeyId: key, id }));
    const statement = callbacksByIdSql(keys);
    const { rows } = await db.query(statement.text, statement.values);
    expect(rows.map((r) => [r.id, r.attemptRows.length]).sort()).toEqual(keys.map((k) => [k.id, 1]).sort());
    const one = callbacksByIdSql([{ apiKeyId: key, id: handMade }]);
    const [run] = await explainStatement(url, one);
    expect(partitionsRead(run.Plan, 'callback').length).toBeGreaterThanOrEqual(DAYS);
  });
});
