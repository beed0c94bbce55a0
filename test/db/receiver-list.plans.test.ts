import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listReceiversWithHealth, type ReceiverListArgs } from '../../src/receivers/receiver-list.sql.js';
import { autovacuumOff, checkPlan, explainStatement, planDatabase } from '../support/plans.js';

/**
 * The receivers list's one statement (a page of receivers with each one's health) on a
 * key with 300 receivers that have kept 60,000 finished callbacks and their attempts,
 * one receiver busy (20,000 attempts in the last hour), 10,000 pending, 5,000 held by a
 * disabled receiver and 200 in flight; the statistics from before the unfinished rows
 * came, as a queue's lag. Small enough to seed in a few seconds; what it checks is that
 * the page costs two index probes per receiver, never a receiver's whole history.
 */
const RECEIVERS = 300;
const FINISHED = 60_000;
const BUSY_ATTEMPTS = 20_000;
const PENDING = 10_000;
const HELD = 5_000;
const IN_FLIGHT = 200;
const PAGE = 100;
/**
 * Rows a page may read (rowsRead): 47,830–48,312 on embedded 18, the receivers' open
 * rows and recent attempts by index; their whole histories are 60,000 finished
 * callbacks and 20,000 more attempts.
 */
const READ_AT_MOST = 75_000;

interface Row {
  name: string;
  attempts: number;
  successes: number;
  pending: number;
  inFlight: number;
  held: number;
  failingSince: Date | null;
}

describe('receiver list plans', () => {
  let db: pg.Client;
  let drop: () => Promise<void>;
  let url: string;
  let key: string;
  let server = '';

  beforeAll(async () => {
    let keys: string[];
    ({ url, drop, db, server, keys } = await planDatabase());
    await autovacuumOff(db, 'callback', 'attempt');
    const [a, b] = keys;
    key = a;
    // Key a's receivers r000..r299: every tenth failing (since 1 to 30 hours ago), r007 disabled; key b has as many of the same names.
    await db.query(
      `INSERT INTO receiver (id, api_key_id, name, url, failing_since, last_failure_at, disabled, disabled_at, disabled_reason)
       SELECT gen_random_uuid(), k, 'r' || lpad(i::text, 3, '0'), 'http://127.0.0.1:9/r' || i,
              CASE WHEN i % 10 = 3 THEN now() - i * interval '6 minutes' END, CASE WHEN i % 10 = 3 THEN now() END,
              i = 7, CASE WHEN i = 7 THEN now() END, CASE WHEN i = 7 THEN 'test' END
       FROM generate_series(0, ${RECEIVERS - 1}) i, unnest($1::uuid[]) k`,
      [[a, b]],
    );
    const receiverIds = (await db.query<{ id: string }>(`SELECT id FROM receiver WHERE api_key_id = $1 ORDER BY name`, [a])).rows.map((r) => r.id);
    const batch = (await db.query<{ id: string }>(`INSERT INTO batch (id, api_key_id, total) VALUES (gen_random_uuid(), $1, 0) RETURNING id`, [a])).rows[0].id;
    // n callbacks over key a's receivers (the i-th to receiver i mod 300), or all to `only`.
    const insert = (n: number, status: string, { held = false, only = -1 } = {}) =>
      db.query(
        `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, timeout_ms, max_attempts, status, next_attempt_at, receiver_id,
                               held, completed_at, lease_owner, lease_expires_at)
         SELECT gen_random_uuid(), $1, $2, 'http://127.0.0.1:9/x', 'http://127.0.0.1:9', 'POST', 5000, 3, $3, now(),
                ($4::uuid[])[CASE WHEN $6::int >= 0 THEN 1 + $6::int ELSE 1 + i % ${RECEIVERS} END], $7::boolean,
                CASE WHEN $3 = 'succeeded' THEN now() END, CASE WHEN $3 = 'in_flight' THEN 'w' END,
                CASE WHEN $3 = 'in_flight' THEN now() + interval '1 minute' END
         FROM generate_series(1, $5::int) i`,
        [batch, a, status, receiverIds, n, only, held],
      );
    await insert(FINISHED, 'succeeded');
    // One attempt per finished callback over the last two hours, a quarter failed; the busy receiver's many more.
    await db.query(
      `INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, outcome, receiver_id)
       SELECT id, api_key_id, host, 1, now() - (n % 7200) * interval '1 second', 10, CASE WHEN n % 4 = 0 THEN 'http_error' ELSE 'success' END, receiver_id
       FROM (SELECT c.*, row_number() OVER () AS n FROM callback c) c`,
    );
    await db.query(
      `INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, outcome, receiver_id)
       SELECT (SELECT id FROM callback LIMIT 1), $1, 'http://127.0.0.1:9', 2, now() - i * interval '150 ms', 10, 'success', $2
       FROM generate_series(1, ${BUSY_ATTEMPTS}) i`,
      [a, receiverIds[0]],
    );
    await db.query('VACUUM ANALYZE callback');
    await db.query('VACUUM ANALYZE attempt');
    await db.query('VACUUM ANALYZE receiver');
    await insert(PENDING, 'pending');
    await insert(HELD, 'pending', { held: true, only: 7 });
    await insert(IN_FLIGHT, 'in_flight');
  }, 120_000);
  afterAll(async () => {
    await db?.end();
    await drop?.();
  });

  const since = new Date(Date.now() - 3_600_000);
  const args = (over: Partial<ReceiverListArgs> = {}): ReceiverListArgs => ({ apiKeyId: key, limit: PAGE, sort: 'name', since, ...over });
  const run = async (a: ReceiverListArgs) => {
    const statement = listReceiversWithHealth(a);
    return (await db.query<Row>(statement.text, statement.values as unknown[])).rows;
  };

  it("should count each receiver's recent attempts and unfinished callbacks as a row-by-row count does", async () => {
    const { rows: truth } = await db.query<Row>(
      `SELECT r.name, r.failing_since AS "failingSince",
              (SELECT count(*) FROM attempt t WHERE t.receiver_id = r.id AND t.started_at >= $2)::int AS attempts,
              (SELECT count(*) FROM attempt t WHERE t.receiver_id = r.id AND t.started_at >= $2 AND t.outcome = 'success')::int AS successes,
              (SELECT count(*) FROM callback c WHERE c.receiver_id = r.id AND c.status = 'pending' AND NOT c.held)::int AS pending,
              (SELECT count(*) FROM callback c WHERE c.receiver_id = r.id AND c.status = 'in_flight')::int AS "inFlight",
              (SELECT count(*) FROM callback c WHERE c.receiver_id = r.id AND c.status = 'pending' AND c.held)::int AS held
       FROM receiver r WHERE r.api_key_id = $1 ORDER BY r.name`,
      [key, since],
    );
    const pick = (r: Row) => ({ name: r.name, attempts: r.attempts, successes: r.successes, pending: r.pending, inFlight: r.inFlight, held: r.held });
    const pages = [...(await run(args())), ...(await run(args({ after: { name: 'r099' }, limit: 1000 })))];
    expect(pages.map(pick)).toEqual(truth.map(pick));
    expect(truth.find((r) => r.name === 'r007')?.held).toBe(HELD);
    expect(truth.find((r) => r.name === 'r000')!.attempts).toBeGreaterThan(BUSY_ATTEMPTS);
  });

  it('should read a page by name through the name index and two index probes per receiver', async () => {
    checkPlan('receivers by name', await explainStatement(url, listReceiversWithHealth(args())), server, {
      uses: ['receiver_api_key_id_name_key', 'callback_receiver_open_idx', 'attempt_receiver_idx'],
      maxRows: READ_AT_MOST,
    });
  });

  it('should put failing receivers first, the longest failing first, and page on from a cursor in either part', async () => {
    const all = await run(args({ sort: 'health', limit: 1000 }));
    const failing = all.filter((r) => r.failingSince);
    expect(failing).toHaveLength(RECEIVERS / 10);
    expect(all.slice(0, failing.length)).toEqual(failing);
    expect(failing.map((r) => r.failingSince!.getTime())).toEqual(failing.map((r) => r.failingSince!.getTime()).sort((x, y) => x - y));
    expect(all.slice(failing.length).map((r) => r.name)).toEqual(
      all
        .slice(failing.length)
        .map((r) => r.name)
        .sort(),
    );
    const [firstPage, midFailing, midHealthy] = [
      await run(args({ sort: 'health', limit: 10 })),
      await run(args({ sort: 'health', limit: 10, after: { name: failing[24].name, failingSince: failing[24].failingSince } })),
      await run(args({ sort: 'health', limit: 10, after: { name: all[100].name, failingSince: null } })),
    ];
    expect(firstPage.map((r) => r.name)).toEqual(all.slice(0, 10).map((r) => r.name));
    expect(midFailing.map((r) => r.name)).toEqual(all.slice(25, 35).map((r) => r.name));
    expect(midHealthy.map((r) => r.name)).toEqual(all.slice(101, 111).map((r) => r.name));
    for (const [name, a] of [
      ['receivers by health', args({ sort: 'health' })],
      ['receivers by health after a cursor', args({ sort: 'health', after: { name: failing[5].name, failingSince: failing[5].failingSince } })],
    ] as const) {
      checkPlan(name, await explainStatement(url, listReceiversWithHealth(a)), server, {
        uses: ['callback_receiver_open_idx', 'attempt_receiver_idx'],
        maxRows: READ_AT_MOST,
      });
    }
  });
});
