import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { OutcomeRepository } from '../../src/dispatch/outcome.repository.js';
import type { RecordedOutcome } from '../../src/dispatch/outcome.types.js';
import { mergeHealth, receiverHealth } from '../support/receiver-health.oracle.js';
import { connect } from '../support/database.js';
import { startTestService, waitForLockWaiter, type TestService } from '../support/service.js';

/** Receiver health as write-backs from several workers land it: in any order, and with the outcomes or not at all. */
describe(`${OutcomeRepository.name} receiver health`, () => {
  let service: TestService;
  let db: pg.Client;
  let outcomes: OutcomeRepository;
  let keyId: string;
  let receiverId: string;
  const t = (s: number) => new Date(Date.UTC(2026, 11, 1, 10, 0, s));

  beforeAll(async () => {
    service = await startTestService({ role: 'api' });
    db = await connect(service.databaseUrl);
    outcomes = service.app.get(OutcomeRepository);
    keyId = (await db.query('SELECT id FROM api_key LIMIT 1')).rows[0].id;
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
  });
  beforeEach(async () => {
    await db.query('DELETE FROM callback; DELETE FROM batch');
    await db.query('DELETE FROM receiver');
    receiverId = (await db.query(`INSERT INTO receiver (id, api_key_id, name) VALUES (gen_random_uuid(), $1, 'r') RETURNING id`, [keyId])).rows[0].id;
  });

  /** A callback of the receiver, leased to `owner` as a claim leaves it. */
  async function leased(owner = 'w'): Promise<string> {
    const batch = (await db.query(`INSERT INTO batch (id, api_key_id, label, total) VALUES (gen_random_uuid(), $1, 'h', 1) RETURNING id`, [keyId])).rows[0].id;
    return (
      await db.query(
        `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, headers, timeout_ms, max_attempts, status, next_attempt_at,
                               lease_owner, lease_expires_at, receiver_id)
         VALUES (gen_random_uuid(), $1, $2, 'http://127.0.0.1:9/h', 'http://127.0.0.1:9', 'POST', '{}', 1000, 8, 'in_flight', now(),
                 $3, now() + interval '1 minute', $4) RETURNING id`,
        [batch, keyId, owner, receiverId],
      )
    ).rows[0].id;
  }

  const outcome = (callbackId: string, success: boolean, startedAt: Date): RecordedOutcome => ({
    callbackId,
    apiKeyId: keyId,
    host: 'http://127.0.0.1:9',
    receiverId,
    number: 1,
    status: success ? 'succeeded' : 'pending',
    nextAttemptAt: success ? null : new Date(Date.now() + 60_000),
    completedAt: success ? new Date() : null,
    startedAt,
    durationMs: 5,
    dnsMs: null,
    connectMs: null,
    tlsMs: null,
    tunnelMs: null,
    firstByteMs: null,
    statusCode: success ? 200 : 503,
    outcome: success ? 'success' : 'http_error',
    error: null,
    responseHeaders: null,
    responseBody: null,
  });
  const land = async (success: boolean, at: Date) => {
    const id = await leased();
    expect(await outcomes.recordOutcomes('w', [outcome(id, success, at)])).toEqual([id]);
  };
  /** Runs `work` while every update of a receiver row fails ('receiver write refused'). */
  async function refusingReceiverWrites(work: () => Promise<void>): Promise<void> {
    await db.query(`CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'receiver write refused'; END $$`);
    await db.query('CREATE TRIGGER refuse BEFORE UPDATE ON receiver FOR EACH ROW EXECUTE FUNCTION refuse()');
    try {
      await work();
    } finally {
      await db.query('DROP TRIGGER refuse ON receiver');
      await db.query('DROP FUNCTION refuse()');
    }
  }
  const health = async () =>
    (await db.query('SELECT failing_since, last_failure_at, last_success_at FROM receiver WHERE id = $1', [receiverId])).rows[0] as Record<string, Date | null>;

  it('should not start failing_since with a failure older than a success already recorded', async () => {
    await land(true, t(10));
    await land(false, t(5)); // sent before the success, written back after it
    expect((await health()).failing_since).toBeNull();
    await land(false, t(12));
    expect(await health()).toMatchObject({ failing_since: t(12), last_failure_at: t(12) });
  });

  it('should not clear failing_since with a success older than the failures recorded after it, nor move it back', async () => {
    await land(true, t(1));
    await land(false, t(20));
    await land(true, t(15)); // older than the failure: the receiver is still failing since 20
    expect((await health()).failing_since).toEqual(t(20));
    await land(false, t(18)); // after the last success (15), before 20: the first failure after it
    expect((await health()).failing_since).toEqual(t(18));
    await land(false, t(30));
    expect(await health()).toMatchObject({ failing_since: t(18), last_failure_at: t(30) });
    await land(true, t(31));
    expect((await health()).failing_since).toBeNull();
  });

  it('should keep a receiver failing when a success lands between its first and last failure', async () => {
    await land(true, t(1));
    await land(false, t(10));
    await land(false, t(20));
    for (const alone of [true, false]) {
      // a write-back of that success alone (the one statement of successes), and one beside a failure of another receiver's (the transaction)
      await db.query('UPDATE receiver SET last_success_at = $2, failing_since = $3, last_failure_at = $4 WHERE id = $1', [receiverId, t(1), t(10), t(20)]);
      if (alone) await land(true, t(15));
      else {
        const other = (await db.query(`INSERT INTO receiver (id, api_key_id, name) VALUES (gen_random_uuid(), $1, 'o') RETURNING id`, [keyId])).rows[0].id;
        const [mine, theirs] = [await leased(), await leased()];
        await db.query('UPDATE callback SET receiver_id = $2 WHERE id = $1', [theirs, other]);
        expect(await outcomes.recordOutcomes('w', [outcome(mine, true, t(15)), { ...outcome(theirs, false, t(16)), receiverId: other }])).toHaveLength(2);
      }
      // the failure at 20 came after the success at 15: failing since then, not cleared
      expect(await health(), alone ? 'alone' : 'beside a failure').toEqual({ last_success_at: t(15), failing_since: t(20), last_failure_at: t(20) });
    }
  });

  it('should write the health with the outcomes or not at all', async () => {
    const id = await leased();
    await refusingReceiverWrites(async () => {
      await expect(outcomes.recordOutcomes('w', [outcome(id, false, t(40))])).rejects.toThrow(/receiver write refused/);
      // The callback is as the claim left it: the write-back is retried whole.
      expect((await db.query('SELECT status, attempts, lease_owner FROM callback WHERE id = $1', [id])).rows[0]).toEqual({
        status: 'in_flight',
        attempts: 0,
        lease_owner: 'w',
      });
      expect((await db.query('SELECT count(*)::int AS n FROM attempt WHERE callback_id = $1', [id])).rows[0].n).toBe(0);
    });
    expect(await outcomes.recordOutcomes('w', [outcome(id, false, t(40))])).toEqual([id]);
    expect((await health()).failing_since).toEqual(t(40));
  });

  it('should write a healthy receiver at most once a second, however many successes land, and lock it no more often', async () => {
    await land(true, t(50));
    const ids = [await leased(), await leased()]; // made first: their foreign key checks lock the receiver too (FOR KEY SHARE)
    // xmin moves with a write, xmax with a lock as well: the successes within the second take neither
    const version = async () => (await db.query("SELECT xmin::text || '/' || xmax::text AS x FROM receiver WHERE id = $1", [receiverId])).rows[0].x;
    const before = await version();
    expect(await outcomes.recordOutcomes('w', [outcome(ids[0], true, new Date(t(50).getTime() + 300))])).toEqual([ids[0]]);
    expect(await outcomes.recordOutcomes('w', [outcome(ids[1], true, new Date(t(50).getTime() + 900))])).toEqual([ids[1]]);
    expect(await version()).toBe(before);
    await land(true, t(52));
    expect(await version()).not.toBe(before);
    expect((await health()).last_success_at).toEqual(t(52));
  });

  it('should write the health of a write-back of successes with its outcomes or not at all, in its one statement', async () => {
    const id = await leased();
    await refusingReceiverWrites(async () => {
      await expect(outcomes.recordOutcomes('w', [outcome(id, true, t(40))])).rejects.toThrow(/receiver write refused/);
      expect((await db.query('SELECT status, lease_owner FROM callback WHERE id = $1', [id])).rows[0]).toEqual({ status: 'in_flight', lease_owner: 'w' });
      expect((await db.query('SELECT count(*)::int AS n FROM attempt WHERE callback_id = $1', [id])).rows[0].n).toBe(0);
    });
    expect(await outcomes.recordOutcomes('w', [outcome(id, true, t(40))])).toEqual([id]);
    expect((await health()).last_success_at).toEqual(t(40));
  });

  it('should lock the receivers of a write-back of successes before its callback rows', async () => {
    // The API locks a receiver, then its callbacks (a disable holds them): a write-back
    // that took the callback rows first and then waited for the receiver would deadlock with it.
    const id = await leased();
    const api = await connect(service.databaseUrl);
    // pg_stat_activity is read once per transaction: watched from a session outside api's
    const watcher = await connect(service.databaseUrl);
    try {
      await api.query('BEGIN');
      await api.query('SELECT 1 FROM receiver WHERE id = $1 FOR UPDATE', [receiverId]);
      const writeBack = outcomes.recordOutcomes('w', [outcome(id, true, t(60))]);
      await waitForLockWaiter(watcher, 'FOR NO KEY UPDATE'); // the write-back now waits for the receiver
      await api.query(`SET LOCAL lock_timeout = '3s'`);
      await api.query('UPDATE callback SET held = true WHERE id = $1', [id]); // would wait for a callback row the write-back held
      await api.query('COMMIT');
      expect(await writeBack).toEqual([id]);
    } finally {
      await api.end();
      await watcher.end();
    }
    expect((await health()).last_success_at).toEqual(t(60));
  });

  it('should not wait for a healthy receiver that a write-back of successes leaves as it is', async () => {
    await land(true, t(70));
    const id = await leased();
    const failure = await connect(service.databaseUrl); // a failure write-back of the receiver, under way
    try {
      await failure.query('BEGIN');
      await failure.query('UPDATE receiver SET failing_since = $2, last_failure_at = $2 WHERE id = $1', [receiverId, new Date(t(70).getTime() + 200)]);
      const writeBack = outcomes.recordOutcomes('w', [outcome(id, true, new Date(t(70).getTime() + 500))]);
      const waited = new Promise((resolve) => setTimeout(() => resolve('waited'), 3_000));
      expect(await Promise.race([writeBack, waited])).toEqual([id]);
      await failure.query('COMMIT');
    } finally {
      await failure.end();
    }
    // As if the success had landed first: it is less than a second after the recorded one, so
    // it was not written, and the failure after that recorded success counts (mergeHealth).
    expect(await health()).toEqual({
      last_success_at: t(70),
      failing_since: new Date(t(70).getTime() + 200),
      last_failure_at: new Date(t(70).getTime() + 200),
    });
  });

  /**
   * Forty rounds of a random stored health (null, or seconds around `base`) against one
   * to three attempts (success or not, as `succeeds` says): what the one statement writes
   * is what mergeHealth (test/support/receiver-health.oracle.ts) says it should.
   */
  async function mergesAsTheOracle(seed: number, base: Date, succeeds: (k: number, next: (n: number) => number) => boolean, oneFailure: boolean) {
    const next = (n: number) => (seed = (seed * 48271) % 2147483647) % n;
    const at = () => (next(4) === 0 ? null : new Date(base.getTime() + next(6_000) - 3_000));
    for (let round = 0; round < 40; round++) {
      const stored = { receiverId, lastSuccessAt: at(), failingSince: at(), lastFailureAt: at() };
      await db.query('UPDATE receiver SET last_success_at = $2, failing_since = $3, last_failure_at = $4 WHERE id = $1', [
        receiverId,
        stored.lastSuccessAt,
        stored.failingSince,
        stored.lastFailureAt,
      ]);
      const rows: RecordedOutcome[] = [];
      for (let k = 0; k <= next(3); k++) rows.push(outcome(await leased(), succeeds(k, next), new Date(base.getTime() + next(6_000) - 3_000)));
      if (oneFailure) rows[0] = outcome(rows[0].callbackId, false, rows[0].startedAt);
      const landed = await outcomes.recordOutcomes('w', rows);
      expect(landed.sort()).toEqual(rows.map((r) => r.callbackId).sort());
      const [change] = mergeHealth([stored], receiverHealth(rows, new Set(landed)));
      const expected = change ?? stored;
      expect(await health(), `round ${round}: ${JSON.stringify({ stored, attempts: rows.map((r) => [r.outcome, r.startedAt]) })}`).toEqual({
        last_success_at: expected.lastSuccessAt,
        failing_since: expected.failingSince,
        last_failure_at: expected.lastFailureAt,
      });
    }
  }

  it('should merge any write-back, failures too, into any stored health as mergeHealth does', async () => {
    // the one statement of a write-back with failures (one at least)
    await mergesAsTheOracle(11, t(200), (k, next) => k > 0 && next(2) === 0, true);
  });

  it('should merge a write-back of successes into any stored health as mergeHealth does', async () => {
    // the one statement of a write-back of successes
    await mergesAsTheOracle(7, t(100), () => true, false);
  });

  describe('case by case', () => {
    /** Sets the receiver's stored health (seconds of t, or null). */
    const store = (success: number | null, failingSince: number | null = null, lastFailure: number | null = null) =>
      db.query('UPDATE receiver SET last_success_at = $2, failing_since = $3, last_failure_at = $4 WHERE id = $1', [
        receiverId,
        success === null ? null : t(success),
        failingSince === null ? null : t(failingSince),
        lastFailure === null ? null : t(lastFailure),
      ]);
    /** One write-back of attempts (success or not, started at second s), all landing. */
    const writeBack = async (...attempts: Array<[boolean, number]>) => {
      const rows = [];
      for (const [success, s] of attempts) rows.push(outcome(await leased(), success, t(s)));
      expect((await outcomes.recordOutcomes('w', rows)).sort()).toEqual(rows.map((r) => r.callbackId).sort());
    };
    const row = (success: number | null, failingSince: number | null = null, lastFailure: number | null = null) => ({
      last_success_at: success === null ? null : t(success),
      failing_since: failingSince === null ? null : t(failingSince),
      last_failure_at: lastFailure === null ? null : t(lastFailure),
    });

    it.each([
      [
        'only successes',
        [
          [true, 1],
          [true, 2],
        ],
        row(2),
      ],
      [
        'only failures',
        [
          [false, 3],
          [false, 1],
        ],
        row(null, 1, 3),
      ],
      [
        'failures after a success, in any order given',
        [
          [false, 5],
          [true, 2],
          [false, 1],
          [false, 4],
        ],
        row(2, 4, 5),
      ],
      [
        'a success after failures (they are behind it: none after it)',
        [
          [false, 1],
          [true, 2],
        ],
        row(2),
      ],
    ] as Array<[string, Array<[boolean, number]>, ReturnType<typeof row>]>)('should read %s', async (_name, attempts, expected) => {
      await writeBack(...attempts);
      expect(await health()).toEqual(expected);
    });

    it('should start a failure record after the latest success', async () => {
      await store(10);
      await writeBack([false, 12], [false, 14]);
      expect(await health()).toEqual(row(10, 12, 14));
    });

    it('should not start one with a failure older than a recorded success', async () => {
      await store(10);
      await writeBack([false, 5]);
      expect(await health()).toEqual(row(10, null, 5));
    });

    it('should end a failure record with a later success, and not with an older one', async () => {
      for (const [stored, attempt, expected] of [
        [[1, 20, 20], [true, 25], row(25, null, 20)],
        [[1, 20, 20], [true, 15], row(15, 20, 20)], // still failing since 20
        [[15, 20, 20], [false, 18], row(15, 18, 20)],
        // a success landing between the row's first and last failure: still failing, since the last one (the first after it known)
        [[1, 10, 20], [true, 15], row(15, 20, 20)],
      ] as Array<[[number, number, number], [boolean, number], ReturnType<typeof row>]>) {
        await store(...stored);
        await writeBack(attempt);
        expect(await health(), JSON.stringify({ stored, attempt })).toEqual(expected);
      }
    });

    it('should keep receivers apart and leave out attempts that did not land', async () => {
      const other = (await db.query(`INSERT INTO receiver (id, api_key_id, name) VALUES (gen_random_uuid(), $1, 'b') RETURNING id`, [keyId])).rows[0].id;
      const [a, b1, b2] = [await leased(), await leased(), await leased('another worker')];
      await db.query('UPDATE callback SET receiver_id = $2 WHERE id = ANY($1::uuid[])', [[b1, b2], other]);
      const rows = [outcome(a, false, t(1)), { ...outcome(b1, true, t(1)), receiverId: other }, { ...outcome(b2, false, t(2)), receiverId: other }];
      expect((await outcomes.recordOutcomes('w', rows)).sort()).toEqual([a, b1].sort()); // b2 is leased to another worker: it does not land
      expect(await health()).toEqual(row(null, 1, 1));
      expect((await db.query('SELECT last_success_at, failing_since, last_failure_at FROM receiver WHERE id = $1', [other])).rows[0]).toEqual(row(1));
    });

    it("should store receiver.failing once a write-back starts a failure record, with its delivery to the operator endpoint, also when that write-back changes the endpoint receiver's own health", async () => {
      expect((await service.api('/v1/operator-endpoint', { method: 'PUT', json: { url: 'http://127.0.0.1:9/ops' } })).status).toBe(201);
      const endpoint = (await db.query(`SELECT receiver_id FROM operator_endpoint WHERE api_key_id = $1`, [keyId])).rows[0].receiver_id;
      const events = async () =>
        (
          await db.query(
            `SELECT e.type, (SELECT count(*)::int FROM callback c WHERE c.batch_id = e.batch_id AND c.receiver_id = $2) AS deliveries
             FROM event e WHERE e.api_key_id = $1 AND e.type = 'receiver.failing' ORDER BY e.created_at`,
            [keyId, endpoint],
          )
        ).rows;
      await store(10);
      await writeBack([false, 5]); // older than the success: starts nothing
      expect(await events()).toEqual([]);
      // the endpoint receiver's own delivery fails in the same write-back: its health row changes in the statement too
      const [mine, ops] = [await leased(), await leased()];
      await db.query('UPDATE callback SET receiver_id = $2 WHERE id = $1', [ops, endpoint]);
      const rows = [outcome(mine, false, t(12)), { ...outcome(ops, false, t(12)), receiverId: endpoint }];
      expect((await outcomes.recordOutcomes('w', rows)).sort()).toEqual([mine, ops].sort());
      expect(await health()).toEqual(row(10, 12, 12));
      expect(await events()).toEqual([{ type: 'receiver.failing', deliveries: 1 }]);
      await writeBack([false, 14]); // the record goes on: no second event
      expect(await events()).toHaveLength(1);
    });
  });
});
