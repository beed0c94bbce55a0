import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppConfig } from '../../src/config/app.config.js';
import { DispatchDatabase, dispatchSettings } from '../../src/database/dispatch-database.js';
import { beginWith, type LocalSettings } from '../../src/database/pg.statements.js';
import { ClaimRepository, type ClaimedCallback } from '../../src/dispatch/claim.repository.js';
import { MaintenanceRepository } from '../../src/dispatch/maintenance.repository.js';
import { CLAIM_PLANNER, FRONT_SCAN_ROWS } from '../../src/dispatch/sql/claim.sql.js';
import type { Prisma } from '../../src/generated/prisma/client.js';
import { OutcomeRepository } from '../../src/dispatch/outcome.repository.js';
import type { RecordedOutcome } from '../../src/dispatch/outcome.types.js';
import { reconcileHeldChunk } from '../../src/receivers/receiver-tasks.sql.js';
import { connect } from '../support/database.js';
import { startTestService, type TestService, jsonOf } from '../support/service.js';

/** Claim and write-back statements against a real Postgres, with no worker running (ROLE=api). */
describe(ClaimRepository.name, () => {
  let service: TestService;
  let db: pg.Client;
  let claims: ClaimRepository;
  let outcomes: OutcomeRepository;
  let maintenance: MaintenanceRepository;

  beforeAll(async () => {
    // A per-host cap above the batch sizes here: these tests are about leases, not host limits.
    service = await startTestService({ role: 'api', hostMaxInFlight: 1000 });
    db = await connect(service.databaseUrl);
    claims = service.app.get(ClaimRepository);
    outcomes = service.app.get(OutcomeRepository);
    maintenance = service.app.get(MaintenanceRepository);
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
  });

  async function batchOf(n: number, extra: Record<string, unknown> = {}): Promise<string[]> {
    const res = await service.api('/v1/batches', {
      method: 'POST',
      json: { callbacks: Array.from({ length: n }, (_, i) => ({ url: `http://127.0.0.1:9/${i}`, ...extra })) },
    });
    expect(res.status).toBe(202);
    return (await jsonOf(res)).callbacks.map((c: { id: string }) => c.id);
  }

  /** The settings each statement seen by statementsOf ran with (its own, on top of the dispatcher's). */
  const settingsOf = new WeakMap<Prisma.Sql, LocalSettings | undefined>();

  /**
   * Runs `fn`, and returns the statements it sent through the dispatcher's database
   * and the claims' own connection (whose session carries CLAIM_PLANNER), in order.
   */
  async function statementsOf(fn: () => Promise<unknown>): Promise<Prisma.Sql[]> {
    const dispatchDb = service.app.get(DispatchDatabase);
    const claimDb = service.app.get(ClaimRepository).claimDb;
    const seen: Prisma.Sql[] = [];
    const run = dispatchDb.query.bind(dispatchDb);
    const runClaim = claimDb.query.bind(claimDb);
    dispatchDb.query = <T>(statement: Prisma.Sql, settings?: LocalSettings) => (
      seen.push(statement),
      settingsOf.set(statement, settings),
      run<T>(statement, settings)
    );
    claimDb.query = <T>(statement: Prisma.Sql) => (seen.push(statement), settingsOf.set(statement, CLAIM_PLANNER), runClaim<T>(statement));
    try {
      await fn();
    } finally {
      dispatchDb.query = run;
      claimDb.query = runClaim;
    }
    return seen;
  }

  /** EXPLAIN (with `options`) of `statement` in a transaction set up as the dispatcher runs it, rolled back. */
  async function planOf(statement: Prisma.Sql, options = ''): Promise<string> {
    const session = new pg.Client({ connectionString: service.databaseUrl });
    await session.connect();
    try {
      await session.query(beginWith({ ...dispatchSettings(service.app.get(AppConfig)), ...settingsOf.get(statement) }));
      const { rows } = await session.query(`EXPLAIN ${options} ${statement.text}`, statement.values);
      await session.query('ROLLBACK');
      return rows.map((x) => x['QUERY PLAN']).join('\n');
    } finally {
      await session.end();
    }
  }

  const statusCounts = async () =>
    Object.fromEntries((await db.query('SELECT status, count(*)::int AS n FROM callback GROUP BY status')).rows.map((r) => [r.status, r.n]));

  const outcome = (id: string, row: { apiKeyId: string; host: string; attempts: number }): RecordedOutcome => ({
    callbackId: id,
    apiKeyId: row.apiKeyId,
    host: row.host,
    number: row.attempts + 1,
    status: 'succeeded',
    nextAttemptAt: null,
    completedAt: new Date(),
    startedAt: new Date(),
    durationMs: 5,
    dnsMs: 0,
    connectMs: 0,
    tlsMs: null,
    tunnelMs: null,
    firstByteMs: 4,
    statusCode: 200,
    outcome: 'success',
    error: null,
    responseHeaders: { a: 'b' },
    responseBody: 'ok',
    receiverId: null,
  });

  it('should never give one row to two concurrent claimers, and leave other states untouched', async () => {
    await db.query('DELETE FROM callback; DELETE FROM batch');
    const due = await batchOf(300);
    const future = await batchOf(20, { runAt: new Date(Date.now() + 3_600_000).toISOString() });
    await db.query(`UPDATE callback SET status = 'succeeded', completed_at = now() WHERE id = ANY($1)`, [due.slice(0, 50)]);
    const before = (await db.query('SELECT id, status, next_attempt_at FROM callback WHERE id = ANY($1) ORDER BY id', [[...due.slice(0, 50), ...future]])).rows;

    const results = await Promise.all(['w1', 'w2', 'w3', 'w4'].map((w) => claims.claimDue(w, 100, 1000, [])));
    // A claim may come back short: a row it read as due was claimed and committed by
    // another meanwhile (not ours, by design). Whatever they left, one more claim takes;
    // what is checked is that no row went to two claimers and all went to some.
    results.push(await claims.claimDue('w5', 250, 1000, []));
    const ids = results.flat().map((r) => r.id);
    expect(ids).toHaveLength(250);
    expect(new Set(ids).size).toBe(250);
    expect(new Set(ids)).toEqual(new Set(due.slice(50)));
    const owners = (await db.query(`SELECT lease_owner, count(*)::int AS n FROM callback WHERE status = 'in_flight' GROUP BY lease_owner`)).rows;
    expect(owners.reduce((s, r) => s + r.n, 0)).toBe(250);
    for (const [i, w] of ['w1', 'w2', 'w3', 'w4', 'w5'].entries()) {
      expect(owners.find((r) => r.lease_owner === w)?.n ?? 0).toBe(results[i].length);
    }
    const after = (await db.query('SELECT id, status, next_attempt_at FROM callback WHERE id = ANY($1) ORDER BY id', [[...due.slice(0, 50), ...future]])).rows;
    expect(after).toEqual(before);
  });

  it('should skip hosts it is told are full', async () => {
    await db.query('DELETE FROM callback; DELETE FROM batch');
    await batchOf(5);
    const other = await service.api('/v1/batches', { method: 'POST', json: { callbacks: [{ url: 'http://127.0.0.2:9/x' }] } });
    expect(other.status).toBe(202);
    const got = await claims.claimDue('w', 100, 1000, ['http://127.0.0.1:9']);
    expect(got.map((r) => r.host)).toEqual(['http://127.0.0.2:9']);
  });

  it('should discard a write-back from a worker whose lease expired and was taken over', async () => {
    await db.query('DELETE FROM callback; DELETE FROM batch');
    const [id] = await batchOf(1);
    const [row] = await claims.claimDue('old', 10, 1000, []);
    // Time set, not rewritten: the reaper and the next claim run past the lease's end.
    const later = new Date(Date.now() + row.timeoutMs + 60_000);
    expect(await maintenance.reapExpiredLeases(new Date(Date.now() + 500))).toEqual({ due: 0, failed: 0 });
    expect(await maintenance.reapExpiredLeases(later)).toEqual({ due: 1, failed: 0 });
    expect(await claims.claimDue('new', 10, 1000, [], { now: new Date(Date.now() + 5000) })).toEqual([]);
    const [again] = await claims.claimDue('new', 10, 1000, [], { now: later });
    expect(again.id).toBe(id);

    expect(await outcomes.recordOutcomes('old', [outcome(id, row)])).toEqual([]);
    let state = (await db.query('SELECT status, lease_owner, attempts FROM callback WHERE id = $1', [id])).rows[0];
    // The lost attempt counted (attempt 1, no record of it), the new worker's is attempt 2.
    expect(state).toEqual({ status: 'in_flight', lease_owner: 'new', attempts: 1 });
    expect((await db.query('SELECT count(*)::int AS n FROM attempt WHERE callback_id = $1', [id])).rows[0].n).toBe(0);

    expect(await outcomes.recordOutcomes('new', [outcome(id, again)])).toEqual([id]);
    state = (await db.query('SELECT status, lease_owner, attempts FROM callback WHERE id = $1', [id])).rows[0];
    expect(state).toEqual({ status: 'succeeded', lease_owner: null, attempts: 2 });
    const attempts = (await db.query('SELECT number, outcome, worker, response_headers FROM attempt WHERE callback_id = $1', [id])).rows;
    expect(attempts).toEqual([{ number: 2, outcome: 'success', worker: 'new', response_headers: { a: 'b' } }]);
  });

  it('should store each row its own response headers, whatever they hold, and none for a call without a response', async () => {
    await db.query('DELETE FROM callback; DELETE FROM batch');
    await batchOf(3);
    const rows = await claims.claimDue('w', 10, 1000, []);
    expect(rows).toHaveLength(3);
    const odd = { 'x-quote': 'say "hi"', 'x-slash': 'a\\b', 'x-json': '{"k":[1,null]}', 'x-text': 'é ✓ null NULL' };
    const headers = [odd, null, { only: 'one' }];
    const written = rows.map((row, i) => ({ ...outcome(row.id, row), responseHeaders: headers[i] }));
    expect((await outcomes.recordOutcomes('w', written)).sort()).toEqual(rows.map((r) => r.id).sort());
    const stored = await db.query('SELECT callback_id, response_headers, response_headers IS NULL AS none FROM attempt WHERE callback_id = ANY($1)', [
      rows.map((r) => r.id),
    ]);
    const byId = new Map(stored.rows.map((r) => [r.callback_id, r]));
    expect(rows.map((r) => byId.get(r.id)?.response_headers)).toEqual(headers);
    // SQL NULL, not a JSON null
    expect(rows.map((r) => byId.get(r.id)?.none)).toEqual([false, true, false]);
  });

  it('should discard the write-back of a callback cancelled while in flight', async () => {
    await db.query('DELETE FROM callback; DELETE FROM batch');
    const [id] = await batchOf(1);
    const [row] = await claims.claimDue('w', 10, 1000, []);
    expect((await service.api(`/v1/callbacks/${id}/cancel`, { method: 'POST' })).status).toBe(200);
    expect(await outcomes.recordOutcomes('w', [outcome(id, row)])).toEqual([]);
    expect((await db.query('SELECT status FROM callback WHERE id = $1', [id])).rows[0].status).toBe('cancelled');
  });

  it('should hand back released claims untouched and stamp a batch complete only when nothing is left', async () => {
    await db.query('DELETE FROM callback; DELETE FROM batch');
    const ids = await batchOf(3);
    const rows = await claims.claimDue('w', 10, 1000, []);
    expect(await outcomes.releaseClaims('someone-else', ids)).toBe(0);
    expect(await outcomes.releaseClaims('w', [ids[2]])).toBe(1);
    expect(await statusCounts()).toEqual({ in_flight: 2, pending: 1 });
    const byId = new Map(rows.map((r) => [r.id, r]));
    await outcomes.recordOutcomes('w', [outcome(ids[0], byId.get(ids[0])!), outcome(ids[1], byId.get(ids[1])!)]);
    const batchId = rows[0].batchId;
    expect(await outcomes.completeBatches([batchId])).toEqual([]);
    const [last] = await claims.claimDue('w', 10, 1000, []);
    await outcomes.recordOutcomes('w', [outcome(last.id, last)]);
    const done = await outcomes.completeBatches([batchId]);
    expect(done.map((b) => b.id)).toEqual([batchId]);
    expect(await outcomes.completeBatches([batchId])).toEqual([]);
  });

  it('should read host limits through the host index, not every destination ever called', async () => {
    await db.query('DELETE FROM callback; DELETE FROM batch');
    // Months of traffic leave one host row per destination; few are busy, paused or throttled.
    await db.query(`INSERT INTO host (host) SELECT 'https://customer-' || i || '.example.com:443' FROM generate_series(1, 20000) AS i`);
    try {
      await db.query(`UPDATE host SET in_flight = 1000 WHERE host = 'https://customer-7.example.com:443'`); // at its cap
      await db.query('ANALYZE host');
      await batchOf(3);
      const seen = await statementsOf(async () => expect(await claims.claimDue('w', 10, 1000, [])).toHaveLength(3));
      const plan = await planOf(seen[0]);
      expect(plan).toMatch(/Index Scan using host_limited_idx on host/);
      expect(plan).not.toMatch(/Seq Scan on host\b/); // the host table (host_key_breaker holds a handful of rows)
    } finally {
      await db.query(`DELETE FROM host WHERE host LIKE 'https://customer-%'`);
    }
  });

  it("should take another host's rows past a larger backlog of a host at its cap, reading at most the front of it", async () => {
    await db.query('DELETE FROM callback; DELETE FROM batch');
    // Host A: more due rows than the front walk reads, at its cap. Host B: a few rows behind them.
    const ids = await batchOf(1);
    const {
      rows: [{ batch_id: batchId, api_key_id: keyId }],
    } = await db.query('SELECT batch_id, api_key_id FROM callback WHERE id = $1', [ids[0]]);
    await db.query(
      `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, headers, timeout_ms, max_attempts, status, next_attempt_at)
       SELECT gen_random_uuid(), $1, $2, 'http://127.0.0.2:9/a', 'http://127.0.0.2:9', 'POST', '{}', 1000, 1, 'pending', now() - interval '1 hour' + i * interval '1 ms'
       FROM generate_series(1, $3::int) AS i`,
      [batchId, keyId, FRONT_SCAN_ROWS + 500],
    );
    // Hosts C…: rows not due for an hour (retries waiting); the pass host by host skips them.
    await db.query(
      `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, headers, timeout_ms, max_attempts, status, next_attempt_at)
       SELECT gen_random_uuid(), $1, $2, 'https://c' || i || '.example.com/x', 'https://c' || i || '.example.com:443', 'POST', '{}', 1000, 1, 'pending', now() + interval '1 hour'
       FROM generate_series(1, 300) AS i`,
      [batchId, keyId],
    );
    await db.query(`UPDATE host SET in_flight = 1000 WHERE host = 'http://127.0.0.2:9'`); // at its cap (1000 here)
    await db.query('ANALYZE callback');
    try {
      let rows: ClaimedCallback[] = [];
      const seen = await statementsOf(async () => (rows = await claims.claimDue('w', 50, 1000, [])));
      // Host B's row (127.0.0.1:9, the batch above) is behind all of A's, and still taken.
      expect(rows.map((r) => r.id)).toEqual(ids);
      expect(seen).toHaveLength(2);
      await db.query(`UPDATE callback SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL WHERE id = $1`, [ids[0]]);
      await db.query(`UPDATE host SET in_flight = 0 WHERE host = 'http://127.0.0.1:9'`);
      // Each statement, run again as it was: no node passes over more than the front.
      for (const statement of seen) {
        const plan = await planOf(statement, '(ANALYZE, COSTS OFF, TIMING OFF)');
        const passedOver = [...plan.matchAll(/Rows Removed by Filter: (\d+)/g)].map((m) => Number(m[1]));
        expect(Math.max(0, ...passedOver)).toBeLessThanOrEqual(FRONT_SCAN_ROWS);
        // The hosts visited one by one are those with due rows (A, B, then the end), not C….
        for (const m of plan.matchAll(/Recursive Union \(actual rows=(\d+)/g)) expect(Number(m[1])).toBeLessThanOrEqual(3);
      }
    } finally {
      await db.query(`UPDATE host SET in_flight = 0 WHERE host = 'http://127.0.0.2:9'`);
      await db.query('DELETE FROM callback; DELETE FROM batch');
    }
  });

  it('should claim by walking the key due index and write back by primary key, even when the statistics say nothing is due', async () => {
    await db.query('DELETE FROM callback; DELETE FROM batch');
    // Statistics taken while nothing is pending or in flight, then a burst: the
    // planner believes no row matches, as right after every quiet spell.
    const [seed] = await batchOf(1);
    await db.query(`UPDATE callback SET status = 'succeeded', completed_at = now() WHERE id = $1`, [seed]);
    await db.query('ANALYZE callback');
    const {
      rows: [{ batch_id: batchId, api_key_id: keyId }],
    } = await db.query('SELECT batch_id, api_key_id FROM callback WHERE id = $1', [seed]);
    await db.query(
      `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, headers, timeout_ms, max_attempts, status, next_attempt_at)
       SELECT gen_random_uuid(), $1, $2, 'http://127.0.0.1:9/x', 'http://127.0.0.1:9', 'POST', '{}', 1000, 1, 'pending', now() - interval '1 minute'
       FROM generate_series(1, 5000)`,
      [batchId, keyId],
    );

    // The statements the repositories run, explained on a session set up as the dispatcher's.
    let rows: ClaimedCallback[] = [];
    const seen = await statementsOf(async () => {
      rows = await claims.claimDue('w', 200, 1000, []);
      await outcomes.recordOutcomes(
        'w',
        rows.map((r) => outcome(r.id, r)),
      );
    });
    expect(rows).toHaveLength(200);
    const [claimPlan, writePlan] = [await planOf(seen[0]), await planOf(seen[1])];
    // Key by key (its share), each key's due rows as one range of the key index, never a scan of the whole queue.
    expect(claimPlan, claimPlan).toMatch(/Index (Only )?Scan using callback_live_key_due_idx on callback_live/);
    expect(claimPlan, claimPlan).not.toMatch(/Bitmap Heap Scan on callback|Seq Scan on callback|callback_(live_)?due_idx/);
    // By primary key in the queue's partition (an index or bitmap scan of callback_live_pkey), never the whole table.
    expect(writePlan, writePlan).toMatch(/(Index|Bitmap Index) Scan on callback_live_pkey|Index Scan using callback_live_pkey on callback_live/);
    expect(writePlan, writePlan).not.toMatch(/Seq Scan on callback|callback_(live_)?lease_idx|callback_(live_)?batch_id_status_idx/);
  });

  it("should pass over held rows (a disabled receiver's) in the front walk and past it, keeping the key and host index walks", async () => {
    await db.query('DELETE FROM callback; DELETE FROM batch');
    const ids = await batchOf(40);
    const held = ids.filter((_, i) => i % 2 === 0); // every other row, the oldest first
    const {
      rows: [{ api_key_id: key }],
    } = await db.query('SELECT api_key_id FROM callback WHERE id = $1', [ids[0]]);
    const {
      rows: [{ id: receiverId }],
    } = await db.query(
      `INSERT INTO receiver (id, api_key_id, name, disabled, disabled_at) VALUES (gen_random_uuid(), $1, 'held-test', true, now()) RETURNING id`,
      [key],
    );
    await db.query('UPDATE callback SET receiver_id = $2 WHERE id = ANY($1::uuid[])', [held, receiverId]);
    const run = (st: Prisma.Sql) => db.query(st.text, st.values);
    // the receiver disabled or enabled, and its task's chunks run to the end
    const holdAll = async (disabled: boolean) => {
      await db.query('UPDATE receiver SET disabled = $2, disabled_at = CASE WHEN $2 THEN now() END WHERE id = $1', [receiverId, disabled]);
      const {
        rows: [{ id: taskId }],
      } = await db.query(`INSERT INTO task (id, api_key_id, kind, receiver_id) VALUES (gen_random_uuid(), $1, 'receiver.disable', $2) RETURNING id`, [
        key,
        receiverId,
      ]);
      while (!(await run(reconcileHeldChunk(taskId, receiverId, 400))).rows[0].finished);
    };
    const before = (await db.query('SELECT id, next_attempt_at FROM callback WHERE id = ANY($1::uuid[]) ORDER BY id', [held])).rows;
    await holdAll(true);
    // A queue of the size the key index is for: 5,000 more of the key's rows, due tomorrow
    // (outside every walk's range), with statistics as autovacuum would have them.
    const {
      rows: [{ batch_id: queueBatch }],
    } = await db.query('SELECT batch_id FROM callback WHERE id = $1', [ids[0]]);
    await db.query(
      `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, headers, timeout_ms, max_attempts, status, next_attempt_at)
       SELECT gen_random_uuid(), $1, $2, 'http://127.0.0.3:9/later', 'http://127.0.0.3:9', 'POST', '{}', 1000, 1, 'pending', now() + interval '1 day'
       FROM generate_series(1, 5000)`,
      [queueBatch, key],
    );
    await db.query('VACUUM ANALYZE callback_live');
    const free = ids.filter((id) => !held.includes(id)).sort();
    const seen = await statementsOf(async () => expect((await claims.claimDue('w', 100, 1000, [])).map((r) => r.id).sort()).toEqual(free));
    // The front walk explained (and rolled back) with the free rows due again, so its plan
    // shows what it reads past the held ones; then claimed again as they were.
    const release = `UPDATE callback SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL, next_attempt_at = now() WHERE id = ANY($1::uuid[])`;
    await db.query(release, [free]);
    const frontPlan = await planOf(seen[0], '(ANALYZE, COSTS OFF, TIMING OFF)');
    expect((await claims.claimDue('w', 100, 1000, [])).map((r) => r.id).sort()).toEqual(free);
    // An index-only scan where autovacuum has marked the pages all-visible, a plain one where not.
    expect(frontPlan).toMatch(/Index (Only )?Scan using callback_live_key_due_idx on callback_live/);
    expect(frontPlan).not.toMatch(/Seq Scan on callback|Bitmap Heap Scan on callback/);
    // Held rows are due HELD_SHIFT later: the key's due walk does not even read them.
    const dueWalk = /CTE cand\n([\s\S]*?)\n {2}CTE /.exec(frontPlan)![1];
    const keyWalk = /Index (Only )?Scan using callback_live_key_due_idx on callback_live[^\n]*\n((?: {10,}.*\n)*)/.exec(dueWalk)![0];
    expect(keyWalk).not.toMatch(/Rows Removed by Filter/);
    expect((await db.query(`SELECT status, count(*)::int AS n FROM callback WHERE held GROUP BY status`)).rows).toEqual([{ status: 'pending', n: 20 }]);
    // Released, they are due exactly as before, and claimed.
    await holdAll(false);
    expect((await db.query('SELECT id, next_attempt_at FROM callback WHERE id = ANY($1::uuid[]) ORDER BY id', [held])).rows).toEqual(before);
    expect((await claims.claimDue('w', 100, 1000, [])).map((r) => r.id).sort()).toEqual([...held].sort());
    await db.query(release, [held]);
    await holdAll(true);

    // Past the front: a host at its cap with more due rows than the front reads, then these 40 again, half held.
    await db.query(`UPDATE callback SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL, next_attempt_at = now() WHERE status = 'in_flight'`);
    const {
      rows: [{ batch_id: batchId, api_key_id: keyId }],
    } = await db.query('SELECT batch_id, api_key_id FROM callback WHERE id = $1', [ids[0]]);
    await db.query(
      `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, headers, timeout_ms, max_attempts, status, next_attempt_at)
       SELECT gen_random_uuid(), $1, $2, 'http://127.0.0.2:9/a', 'http://127.0.0.2:9', 'POST', '{}', 1000, 1, 'pending', now() - interval '1 hour' + i * interval '1 ms'
       FROM generate_series(1, $3::int) AS i`,
      [batchId, keyId, FRONT_SCAN_ROWS + 100],
    );
    await db.query(`UPDATE host SET in_flight = 1000 WHERE host = 'http://127.0.0.2:9'`);
    try {
      let past: Prisma.Sql[] = [];
      past = await statementsOf(async () => expect((await claims.claimDue('w', 100, 1000, [])).map((r) => r.id).sort()).toEqual(free));
      expect(past).toHaveLength(2);
      const plan = await planOf(past[1]);
      expect(plan).toMatch(/callback_(live_)?pending_host_idx/);
      expect(plan).not.toMatch(/Seq Scan on callback/);
    } finally {
      await db.query(`UPDATE host SET in_flight = 0 WHERE host = 'http://127.0.0.2:9'`);
      await db.query('DELETE FROM callback; DELETE FROM batch');
    }
  });
});
