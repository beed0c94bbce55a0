import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patternsOf } from '../../src/receivers/event-type.policy.js';
import { subscribersOf } from '../../src/events/subscriber.sql.js';
import { checkPlan, explainStatement, planDatabase, planNodes, type PlanNode } from '../support/plans.js';

/**
 * The publish's subscriber lookup on a key with 20,000 receivers, 1,000 of them
 * subscribed to `order.paid` and 10 to `order.*`, the rest each to a type of its own;
 * another key has 20,000 receivers subscribed to `order.paid` too. What it checks:
 * the lookup reads the type's subscribers through event_subscription_pkey and each
 * receiver by its primary key, never the key's other receivers nor another key's.
 */
const RECEIVERS = 20_000;
const EXACT = 1_000;
const WILDCARD = 10;
/** Rows the lookup may read (rowsRead): 2,020 on embedded 18 (the type's subscribers and their receivers); the key's receivers are 20,000. */
const READ_AT_MOST = 4_500;

describe('event subscriber plans', () => {
  let db: pg.Client;
  let drop: () => Promise<void>;
  let url: string;
  let key: string;
  let server = '';

  beforeAll(async () => {
    let keys: string[];
    ({ url, drop, db, server, keys } = await planDatabase());
    const [a, b] = keys;
    key = a;
    // the trigger fills event_subscription from event_types, as a PUT does
    await db.query(
      `INSERT INTO receiver (id, api_key_id, name, url, event_types)
       SELECT gen_random_uuid(), $1, 'r' || i, 'http://127.0.0.1:9/r' || i,
              CASE WHEN i <= ${EXACT} THEN ARRAY['order.paid'] WHEN i <= ${EXACT + WILDCARD} THEN ARRAY['order.*']
                   ELSE ARRAY['t' || i || '.created'] END
       FROM generate_series(1, ${RECEIVERS}) i`,
      [a],
    );
    await db.query(
      `INSERT INTO receiver (id, api_key_id, name, url, event_types)
       SELECT gen_random_uuid(), $1, 'r' || i, 'http://127.0.0.1:9/r' || i, ARRAY['order.paid'] FROM generate_series(1, ${RECEIVERS}) i`,
      [b],
    );
    // one of the subscribers deleted: not a subscriber any more
    await db.query(`UPDATE receiver SET deleted_at = now(), name = '/deleted/' || id WHERE api_key_id = $1 AND name = 'r1'`, [a]);
    await db.query('ANALYZE receiver');
    await db.query('ANALYZE event_subscription');
  }, 60_000);
  afterAll(async () => {
    await db?.end();
    await drop?.();
  });

  it("should find the type's subscribers, wildcards included, once each, without the deleted one", async () => {
    const statement = subscribersOf(key, patternsOf('order.paid'));
    const { rows } = await db.query(statement.text, statement.values as unknown[]);
    expect(rows).toHaveLength(EXACT + WILDCARD - 1);
    expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length);
    const named = subscribersOf(key, patternsOf('order.paid'), ['r2', 'r1005', 'r5000']);
    expect((await db.query(named.text, named.values as unknown[])).rows.map((r) => r.name).sort()).toEqual(['r1005', 'r2']);
  });

  it("should read only the type's subscription entries and each subscriber by primary key", async () => {
    const runs = await explainStatement(url, subscribersOf(key, patternsOf('order.paid')));
    checkPlan('event subscribers', runs, server, { uses: ['event_subscription_pkey', 'receiver_pkey'], maxRows: READ_AT_MOST });
    for (const run of runs) {
      const nodes = planNodes(run.Plan) as Array<PlanNode & { 'Actual Rows'?: number }>;
      const scans = nodes.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => n['Relation Name']);
      expect(scans, `${run.mode}: no sequential scan`).toEqual([]);
      // the subscription entries read: this key's for the type and its wildcard, not another key's 20,000
      const entries = nodes.filter((n) => n['Index Name'] === 'event_subscription_pkey');
      for (const n of entries) expect(n['Actual Rows'], `${run.mode}: entries read`).toBeLessThanOrEqual(EXACT + WILDCARD);
    }
  });
});
