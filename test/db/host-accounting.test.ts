import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClaimRepository } from '../../src/dispatch/claim.repository.js';
import { MaintenanceRepository } from '../../src/dispatch/maintenance.repository.js';
import { OutcomeRepository } from '../../src/dispatch/outcome.repository.js';
import { connect } from '../support/database.js';
import { startTestService, type TestService, jsonOf } from '../support/service.js';

/**
 * host.in_flight is kept by triggers on callback: whatever statement changes a
 * callback's status (claim, hand-back, reaper, cancel, delete), the count equals the
 * host's in-flight rows. No worker runs here (ROLE=api): the statements are driven by hand.
 */
describe(ClaimRepository.name, () => {
  let service: TestService;
  let db: pg.Client;
  let claims: ClaimRepository;
  const A = 'http://127.0.0.1:9';
  const B = 'http://127.0.0.2:9';

  beforeAll(async () => {
    service = await startTestService({ role: 'api', hostMaxInFlight: 5 });
    db = await connect(service.databaseUrl);
    claims = service.app.get(ClaimRepository);
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
  });

  async function batch(urls: string[]): Promise<{ id: string; callbacks: Array<{ id: string }> }> {
    const res = await service.api('/v1/batches', { method: 'POST', json: { callbacks: urls.map((url) => ({ url })) } });
    expect(res.status).toBe(202);
    return jsonOf(res);
  }

  /** host → [kept count, actual in-flight rows]. */
  async function counts(): Promise<Record<string, [number, number]>> {
    const { rows } = await db.query(`
      SELECT h.host, h.in_flight AS kept, (SELECT count(*)::int FROM callback c WHERE c.host = h.host AND c.status = 'in_flight') AS actual
      FROM host h ORDER BY h.host`);
    return Object.fromEntries(rows.map((r) => [r.host, [r.kept, r.actual]]));
  }

  it("should keep each host's in-flight count equal to its in-flight rows through claim, cancel, hand-back, reaper and delete", async () => {
    const b = await batch([...Array(8).fill(`${A}/x`), ...Array(3).fill(`${B}/y`)]);
    expect(await counts()).toEqual({ [A]: [0, 0], [B]: [0, 0] });

    const first = await claims.claimDue('w1', 100, 1000, []);
    expect(first.filter((r) => r.host === A)).toHaveLength(5);
    expect(first.filter((r) => r.host === B)).toHaveLength(3);
    expect(await counts()).toEqual({ [A]: [5, 5], [B]: [3, 3] });
    expect(await claims.claimDue('w2', 100, 1000, [])).toEqual([]);

    const aIds = first.filter((r) => r.host === A).map((r) => r.id);
    const cancel = await service.api(`/v1/callbacks/${aIds[0]}/cancel`, { method: 'POST' });
    expect(cancel.status).toBe(200);
    expect(await counts()).toEqual({ [A]: [4, 4], [B]: [3, 3] });

    expect(await service.app.get(OutcomeRepository).releaseClaims('w1', aIds.slice(1, 3))).toBe(2);
    expect(await counts()).toEqual({ [A]: [2, 2], [B]: [3, 3] });

    await db.query(`UPDATE callback SET lease_expires_at = now() - interval '1 second' WHERE id = ANY($1)`, [aIds.slice(3)]);
    expect(await service.app.get(MaintenanceRepository).reapExpiredLeases()).toEqual({ due: 2, failed: 0 });
    expect(await counts()).toEqual({ [A]: [0, 0], [B]: [3, 3] });

    const second = await claims.claimDue('w2', 100, 1000, [], { now: new Date(Date.now() + 1000) }); // past w1's HOST_AFFINITY_MS
    expect(second.map((r) => r.host)).toEqual(Array(5).fill(A));
    expect(await counts()).toEqual({ [A]: [5, 5], [B]: [3, 3] });

    await db.query('DELETE FROM callback WHERE batch_id = $1', [b.id]);
    expect(await counts()).toEqual({ [A]: [0, 0], [B]: [0, 0] });
  });

  it('should hand one probe to a paused host once its cool-down is over, and none before', async () => {
    await batch(Array(3).fill(`${A}/probe`));
    await db.query(`UPDATE host SET breaker_state = 'open', open_until = now() + interval '1 hour' WHERE host = $1`, [A]);
    expect(await claims.claimDue('w', 100, 1000, [])).toEqual([]);
    await db.query(`UPDATE host SET open_until = now() - interval '1 second' WHERE host = $1`, [A]);
    expect(await claims.claimDue('w', 100, 1000, [])).toHaveLength(1);
    const { rows } = await db.query('SELECT breaker_state, in_flight FROM host WHERE host = $1', [A]);
    expect(rows[0]).toEqual({ breaker_state: 'half_open', in_flight: 1 });
    expect(await claims.claimDue('w', 100, 1000, [])).toEqual([]);
  });

  it("should leave a host's freed slots to the worker whose claim took its last free slots for HOST_AFFINITY_MS (100 ms), then to any worker", async () => {
    const C = 'http://127.0.0.3:9';
    await batch(Array(8).fill(`${C}/affinity`));
    const t0 = new Date(Date.now() + 1000); // the rows are due; every claim's time is set, none waits
    const at = (ms: number) => ({ now: new Date(t0.getTime() + ms) });
    const owners = async () => (await db.query('SELECT claimed_by, in_flight FROM host WHERE host = $1', [C])).rows[0];
    const outcomes = service.app.get(OutcomeRepository);
    const ofC = async (claimed: Promise<Array<{ id: string; host: string }>>) => (await claimed).filter((r) => r.host === C);

    const first = await ofC(claims.claimDue('w1', 100, 1000, [], at(0)));
    expect(first).toHaveLength(5);
    expect(await owners()).toEqual({ claimed_by: 'w1', in_flight: 5 });
    expect(
      await outcomes.releaseClaims(
        'w1',
        first.slice(0, 2).map((r) => r.id),
      ),
    ).toBe(2);

    // Two slots free, 5 rows due: another worker leaves them to w1 while its mark lasts, w1 takes them.
    expect(await ofC(claims.claimDue('w2', 100, 1000, [], at(50)))).toEqual([]);
    const again = await ofC(claims.claimDue('w1', 100, 1000, [], at(60)));
    expect(again).toHaveLength(2);
    expect(await owners()).toEqual({ claimed_by: 'w1', in_flight: 5 });

    // w1 stops claiming: 100 ms after its last claim, another worker takes the slots it frees.
    expect(
      await outcomes.releaseClaims(
        'w1',
        again.map((r) => r.id),
      ),
    ).toBe(2);
    expect(await ofC(claims.claimDue('w2', 100, 1000, [], at(150)))).toEqual([]);
    const taken = await ofC(claims.claimDue('w2', 100, 1000, [], at(161)));
    expect(taken).toHaveLength(2);
    expect(await owners()).toEqual({ claimed_by: 'w2', in_flight: 5 });
    expect(await counts()).toMatchObject({ [C]: [5, 5] });

    // A claim that leaves a host room marks nothing: another worker claims there at once.
    const D = 'http://127.0.0.4:9';
    await batch(Array(2).fill(`${D}/room`));
    const ofD = async (claimed: Promise<Array<{ id: string; host: string }>>) => (await claimed).filter((r) => r.host === D);
    expect(await ofD(claims.claimDue('w1', 100, 1000, [], at(200)))).toHaveLength(2);
    await batch(Array(2).fill(`${D}/room`));
    expect(await ofD(claims.claimDue('w2', 100, 1000, [], at(210)))).toHaveLength(2);
    expect((await db.query('SELECT claimed_by FROM host WHERE host = $1', [D])).rows[0].claimed_by).toBeNull();

    // Nor does a claim that takes a host's last slots but more than its worker can send at
    // once: its rows would wait in that worker's memory, and another worker may send.
    const E = 'http://127.0.0.5:9';
    await batch(Array(5).fill(`${E}/waits`));
    const ofE = async (claimed: Promise<Array<{ id: string; host: string }>>) => (await claimed).filter((r) => r.host === E);
    expect(await ofE(claims.claimDue('w1', 100, 1000, [], { ...at(300), sendRoom: 2 }))).toHaveLength(5);
    expect((await db.query('SELECT claimed_by FROM host WHERE host = $1', [E])).rows[0].claimed_by).toBeNull();
  });
  it('should store callbacks for a host whose row another transaction is updating without waiting for it (regression: ON CONFLICT waited)', async () => {
    await batch([`${A}/first`]); // the host's row exists
    // a claim or a write-back changing the host's in_flight, its transaction still open
    const other = await connect(service.databaseUrl);
    try {
      await other.query('BEGIN');
      await other.query(`UPDATE host SET in_flight = in_flight WHERE host = $1`, [A]);
      const t0 = performance.now();
      const stored = await Promise.race([
        batch([`${A}/second`]).then(() => performance.now() - t0),
        new Promise<number>((r) => setTimeout(() => r(Infinity), 2000)),
      ]);
      expect(stored).toBeLessThan(1000);
    } finally {
      await other.query('ROLLBACK');
      await other.end();
    }
  });
});
