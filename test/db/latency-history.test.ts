import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LatencyController } from '../../src/history/latency.controller.js';
import { connect } from '../support/database.js';
import { checkPlan, explainStatement } from '../support/plans.js';
import { latencyStatement, type LatencyFilter } from '../../src/history/latency.repository.js';
import { WITHOUT_JIT } from '../../src/database/api-database.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';

type Bucket = { start: string; count: number; ok: number; failed: number; p50: number; p90: number; p99: number; max: number };

/** percentile_cont as Postgres defines it: linear interpolation between the two nearest ranks. */
function percentile(sorted: number[], p: number): number {
  const pos = p * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

const HOST_A = 'https://a.example:443';
const HOST_B = 'http://b.example:8080';
const T0 = Date.parse('2026-11-02T10:00:00.000Z');

describe(LatencyController.name, () => {
  let service: TestService;
  let db: pg.Client;
  let keyId: string;
  let otherKey: string;
  let batchA: string;
  let batchB: string;

  /** A batch of `host` with one callback, for attempts to hang on. */
  async function seedCallback(apiKeyId: string, host: string): Promise<{ batchId: string; callbackId: string }> {
    const {
      rows: [b],
    } = await db.query(`INSERT INTO batch (id, api_key_id, total) VALUES (gen_random_uuid(), $1, 1) RETURNING id`, [apiKeyId]);
    const {
      rows: [c],
    } = await db.query(
      `INSERT INTO callback (id, batch_id, api_key_id, url, host, method, timeout_ms, max_attempts, status, next_attempt_at)
       VALUES (gen_random_uuid(), $1, $2, $3, $4, 'POST', 1000, 100, 'failed', now()) RETURNING id`,
      [b.id, apiKeyId, `${host}/hook`, host],
    );
    return { batchId: b.id, callbackId: c.id };
  }

  async function seedAttempts(callbackId: string, apiKeyId: string, host: string, rows: Array<[offsetMs: number, durationMs: number, outcome: string]>) {
    await db.query(
      `INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, outcome)
       SELECT $1, $2, $3, n, to_timestamp(t / 1000.0), d, o
       FROM unnest($4::float8[], $5::float8[], $6::text[]) WITH ORDINALITY AS x(t, d, o, n)`,
      [callbackId, apiKeyId, host, rows.map((r) => T0 + r[0]), rows.map((r) => r[1]), rows.map((r) => r[2])],
    );
  }

  beforeAll(async () => {
    service = await startTestService({ role: 'api' });
    db = await connect(service.databaseUrl);
    keyId = (await db.query('SELECT id FROM api_key LIMIT 1')).rows[0].id;
    const other = await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'other tenant' } });
    otherKey = other.key;

    const a = await seedCallback(keyId, HOST_A);
    const b = await seedCallback(keyId, HOST_B);
    const o = await seedCallback(other.id, HOST_A);
    batchA = a.batchId;
    batchB = b.batchId;
    // 10:00–10:01: 20 attempts on A (durations 10..200, two failures), 1 on B.
    await seedAttempts(
      a.callbackId,
      keyId,
      HOST_A,
      Array.from({ length: 20 }, (_, i) => [i * 1000, (i + 1) * 10, i % 10 === 3 ? 'timeout' : 'success']),
    );
    await seedAttempts(b.callbackId, keyId, HOST_B, [[30_000, 5000.5, 'http_error']]);
    // 10:05: one more on A; 10:02–10:04 stay empty.
    await seedAttempts(a.callbackId, keyId, HOST_A, [[5 * 60_000 + 1, 42.125, 'success']]);
    // Another tenant's attempts in the same minute must never show.
    await seedAttempts(o.callbackId, other.id, HOST_A, [[10_000, 99_999, 'success']]);
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
  });

  const range = `from=2026-11-02T10:00:00.000Z&to=2026-11-02T11:00:00.000Z`;

  it('should return per-bucket counts and exact percentiles, omitting empty buckets', async () => {
    const res = await service.apiJson(`/v1/history/latency?${range}&bucket=1m`);
    expect(res).toMatchObject({ bucket: '1m', from: '2026-11-02T10:00:00.000Z', to: '2026-11-02T11:00:00.000Z' });
    expect(res.items.map((b: Bucket) => b.start)).toEqual(['2026-11-02T10:00:00.000Z', '2026-11-02T10:05:00.000Z']);
    const durations = [...Array.from({ length: 20 }, (_, i) => (i + 1) * 10), 5000.5].sort((x, y) => x - y);
    expect(res.items[0]).toEqual({
      start: '2026-11-02T10:00:00.000Z',
      count: 21,
      ok: 18,
      failed: 3,
      p50: percentile(durations, 0.5),
      p90: percentile(durations, 0.9),
      p99: Math.round(percentile(durations, 0.99) * 1000) / 1000,
      max: 5000.5,
    });
    expect(res.items[1]).toEqual({ start: '2026-11-02T10:05:00.000Z', count: 1, ok: 1, failed: 0, p50: 42.125, p90: 42.125, p99: 42.125, max: 42.125 });
  });

  it('should filter by host and by batch', async () => {
    const byHost = await service.apiJson(`/v1/history/latency?${range}&bucket=1h&host=${encodeURIComponent(HOST_B)}`);
    expect(byHost.items).toEqual([{ start: '2026-11-02T10:00:00.000Z', count: 1, ok: 0, failed: 1, p50: 5000.5, p90: 5000.5, p99: 5000.5, max: 5000.5 }]);
    const byBatch = await service.apiJson(`/v1/history/latency?${range}&bucket=1h&batch=${batchA}`);
    expect(byBatch.items.map((b: Bucket) => [b.count, b.ok, b.max])).toEqual([[21, 19, 200]]);
    const both = await service.apiJson(`/v1/history/latency?${range}&bucket=1h&batch=${batchB}&host=${encodeURIComponent(HOST_A)}`);
    expect(both.items).toEqual([]);
  });

  it("should show a key only its own attempts, even when it names another key's batch", async () => {
    const mine = await service.apiJson(`/v1/history/latency?${range}&bucket=1d`, { key: otherKey });
    expect(mine.items.map((b: Bucket) => [b.start, b.count, b.max])).toEqual([['2026-11-02T00:00:00.000Z', 1, 99_999]]);
    const theirs = await service.apiJson(`/v1/history/latency?${range}&batch=${batchA}`, { key: otherKey });
    expect(theirs.items).toEqual([]);
  });

  it('should keep only attempts inside [from, to) and align buckets to UTC', async () => {
    const res = await service.apiJson('/v1/history/latency?from=2026-11-02T10:00:10.000Z&to=2026-11-02T10:05:00.000Z&bucket=5m');
    expect(res.items).toHaveLength(1);
    expect(res.items[0]).toMatchObject({ start: '2026-11-02T10:00:00.000Z', count: 11 });
  });

  it('should default to the last 24 hours in 5-minute buckets', async () => {
    const before = Date.now();
    const res = await service.apiJson('/v1/history/latency');
    expect(res.bucket).toBe('5m');
    expect(Date.parse(res.to) - Date.parse(res.from)).toBe(86_400_000);
    expect(Date.parse(res.to)).toBeGreaterThanOrEqual(before);
    expect(res.items).toEqual([]);
  });

  it.each([
    ['an unknown bucket', 'bucket=2m'],
    ['a from after to', 'from=2026-11-02T11:00:00Z&to=2026-11-02T10:00:00Z'],
    ['a time that is not ISO-8601', 'from=yesterday'],
    ['a batch that is not a UUID', 'batch=42'],
    ['too many buckets', 'from=2026-01-01T00:00:00Z&to=2026-11-01T00:00:00Z&bucket=1m'],
    ['an unknown parameter', 'hots=x'],
  ])('should answer 400 validation_failed for %s', async (_, qs) => {
    const res = await service.api(`/v1/history/latency?${qs}`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe('validation_failed');
  });

  it('should agree with a plain GROUP BY over 20,000 random attempts, for every bucket width and with a host filter', async () => {
    const { callbackId } = await seedCallback(keyId, HOST_A);
    await db.query(
      `INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, outcome)
       SELECT $1, $2, CASE WHEN i % 3 = 0 THEN $4 ELSE $3 END, 1,
              timestamptz '2026-11-10T00:00:00Z' + random() * interval '3 days', round((random() * random() * 2000)::numeric, 3),
              CASE WHEN random() < 0.1 THEN 'timeout' ELSE 'success' END
       FROM generate_series(1, 20000) AS i`,
      [callbackId, keyId, HOST_A, HOST_B],
    );
    const from = '2026-11-10T05:17:00.000Z';
    const to = '2026-11-12T20:03:00.000Z';
    for (const [bucket, width] of [
      ['5m', '5 minutes'],
      ['1h', '1 hour'],
      ['1d', '1 day'],
    ]) {
      for (const host of [undefined, HOST_B]) {
        const { rows } = await db.query(
          `SELECT date_bin($5::interval, started_at, timestamptz '2000-01-01 00:00:00+00') AS start, count(*)::int AS count,
                  (count(*) FILTER (WHERE outcome = 'success'))::int AS ok,
                  percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY duration_ms) AS pct, max(duration_ms) AS max
           FROM attempt WHERE api_key_id = $1 AND started_at >= $2 AND started_at < $3 AND ($4::text IS NULL OR host = $4)
           GROUP BY 1 ORDER BY 1`,
          [keyId, from, to, host ?? null, width],
        );
        const r3 = (v: number) => Math.round(v * 1000) / 1000;
        const expected = rows.map((r) => ({
          start: r.start.toISOString(),
          count: r.count,
          ok: r.ok,
          failed: r.count - r.ok,
          p50: r3(r.pct[0]),
          p90: r3(r.pct[1]),
          p99: r3(r.pct[2]),
          max: r3(r.max),
        }));
        const qs = `from=${from}&to=${to}&bucket=${bucket}${host ? `&host=${encodeURIComponent(host)}` : ''}`;
        const res = await service.apiJson(`/v1/history/latency?${qs}`);
        expect(res.items.length).toBeGreaterThan(2);
        expect(res.items).toEqual(expected);
      }
    }
  });

  // Regression: on a server with JIT (Debian's 15) each read was compiled, 0.45-0.77 s of reads of 1-5 ms.
  const jitCases = (): Array<[string, LatencyFilter]> => {
    const day: LatencyFilter = { apiKeyId: keyId, from: new Date('2026-11-10T00:00:00Z'), to: new Date('2026-11-11T00:00:00Z'), bucketMs: 300_000 };
    return [
      ['a day unfiltered', day],
      ['a day of one host', { ...day, host: HOST_B }],
      ['a day of one batch', { ...day, batchId: batchA }],
    ];
  };
  // jit_above_cost 0: a read of these few attempts is costed as past it as one of millions is (1.2M on 3M attempts)
  const PAST_JIT_COST = { jit_above_cost: '0' };
  const serverHasJit = async () => (await db.query(`SELECT pg_jit_available() AND current_setting('jit') = 'on' AS jit`)).rows[0].jit as boolean;

  it('should read without JIT, unfiltered (through the stored buckets), by host and by batch', async () => {
    const server = (await serverHasJit()) ? 'a server with JIT' : 'a server without';
    for (const [name, f] of jitCases()) {
      checkPlan(name, await explainStatement(service.databaseUrl, latencyStatement(f), { ...PAST_JIT_COST, ...WITHOUT_JIT }), server, {
        uses: [],
        maxRows: 15_000, // 1,668 unfiltered, ~6,600 by host or batch on embedded 18
        jitOff: true,
      });
    }
  });

  // What the setting keeps away, where the server can compile at all (Debian's 15 in CI); skipped, and shown skipped, on a server without JIT.
  it("should be compiled at the same cost without the read's settings, on a server with JIT", async (ctx) => {
    if (!(await serverHasJit())) ctx.skip();
    for (const [name, f] of jitCases()) expect((await explainStatement(service.databaseUrl, latencyStatement(f), PAST_JIT_COST))[0].JIT, name).toBeDefined();
  });

  // Regression: `?host=127.0.0.5` (no scheme or port) silently matched nothing.
  it('should answer 400 naming the form for a host that is not scheme://host:port, and read a default port as spelled out', async () => {
    for (const host of ['127.0.0.5', 'ftp://127.0.0.5:21', 'http://127.0.0.5:80/hooks']) {
      const res = await service.api(`/v1/history/latency?${range}&host=${encodeURIComponent(host)}`);
      expect({ host, status: res.status }).toEqual({ host, status: 400 });
      const body = (await res.json()) as { code: string; message: string };
      expect(body.code).toBe('validation_failed');
      expect(body.message).toMatch(/host must/);
    }
    const spelled = await service.apiJson(`/v1/history/latency?${range}&bucket=1h&host=${encodeURIComponent(HOST_A)}`);
    const bare = await service.apiJson(`/v1/history/latency?${range}&bucket=1h&host=${encodeURIComponent('https://A.example')}`);
    expect(spelled.items.length).toBeGreaterThan(0);
    expect(bare.items).toEqual(spelled.items);
  });

  describe('stored buckets (latency_rollup)', () => {
    const day = '2026-11-20';
    const window = `from=${day}T00:00:00.000Z&to=${day}T06:00:00.000Z&bucket=1h`;
    const stored = async (bucketMs: number) =>
      (
        await db.query(
          `SELECT start, count FROM latency_rollup WHERE api_key_id = $1 AND bucket_ms = $2 AND start >= $3 AND start < $4::timestamptz + interval '1 day' ORDER BY start`,
          [keyId, bucketMs, `${day}T00:00:00Z`, `${day}T00:00:00Z`],
        )
      ).rows.map((r) => [r.start.toISOString(), r.count]);

    beforeAll(async () => {
      // 01:00–02:00 and 03:00–04:00: 50 attempts each; the other hours of the window stay empty.
      const { callbackId } = await seedCallback(keyId, HOST_A);
      const at = (hour: number) =>
        Array.from(
          { length: 50 },
          (_, i) => [Date.parse(`${day}T0${hour}:00:00Z`) - T0 + i * 60_000, (i * 37) % 500, i % 7 ? 'success' : 'timeout'] as [number, number, string],
        );
      await seedAttempts(callbackId, keyId, HOST_A, [...at(1), ...at(3)]);
    });

    it('should store every closed bucket of an unfiltered read, empty ones too, and answer the same from them', async () => {
      const first = await service.apiJson(`/v1/history/latency?${window}`);
      expect(first.items.map((b: Bucket) => [b.start, b.count])).toEqual([
        [`${day}T01:00:00.000Z`, 50],
        [`${day}T03:00:00.000Z`, 50],
      ]);
      expect(await stored(3_600_000)).toEqual([0, 1, 2, 3, 4, 5].map((h) => [`${day}T0${h}:00:00.000Z`, h === 1 || h === 3 ? 50 : 0]));
      expect(await service.apiJson(`/v1/history/latency?${window}`)).toEqual(first);
      // The second read came from the stored rows: a stored bucket changed by hand shows.
      await db.query(`UPDATE latency_rollup SET count = 51 WHERE api_key_id = $1 AND bucket_ms = 3600000 AND start = $2`, [keyId, `${day}T01:00:00Z`]);
      expect((await service.apiJson(`/v1/history/latency?${window}`)).items[0].count).toBe(51);
      await db.query(`UPDATE latency_rollup SET count = 50 WHERE api_key_id = $1 AND bucket_ms = 3600000 AND start = $2`, [keyId, `${day}T01:00:00Z`]);
    });

    it('should store neither the partial buckets at the ends, nor a filtered read, nor a bucket that is not closed', async () => {
      await service.apiJson(`/v1/history/latency?from=${day}T00:30:00.000Z&to=${day}T05:30:00.000Z&bucket=1d`);
      await service.apiJson(`/v1/history/latency?${window.replace('1h', '5m')}&host=${encodeURIComponent(HOST_A)}`);
      expect(await stored(86_400_000)).toEqual([]);
      expect(await stored(300_000)).toEqual([]);
      await service.apiJson('/v1/history/latency?bucket=1m');
      const { rows } = await db.query(`SELECT max(start) AS last FROM latency_rollup WHERE api_key_id = $1 AND bucket_ms = 60000`, [keyId]);
      expect(rows[0].last.getTime()).toBeLessThanOrEqual(Date.now() - 10 * 60_000 - 60_000);
    });

    it('should compute a stored bucket again once an attempt is written into it, in every width', async () => {
      await service.apiJson(`/v1/history/latency?${window}`);
      const wholeDay = `from=${day}T00:00:00.000Z&to=2026-11-21T00:00:00.000Z&bucket=1d`;
      await service.apiJson(`/v1/history/latency?${wholeDay}`);
      expect(await stored(86_400_000)).toEqual([[`${day}T00:00:00.000Z`, 100]]);
      const { callbackId } = await seedCallback(keyId, HOST_A);
      await seedAttempts(callbackId, keyId, HOST_A, [[Date.parse(`${day}T03:30:00Z`) - T0, 9_999, 'http_error']]);
      expect(await stored(3_600_000)).toEqual([0, 1, 2, 4, 5].map((h) => [`${day}T0${h}:00:00.000Z`, h === 1 ? 50 : 0]));
      const after = await service.apiJson(`/v1/history/latency?${window}`);
      expect(after.items.map((b: Bucket) => [b.start, b.count, b.failed, b.max])).toEqual([
        [`${day}T01:00:00.000Z`, 50, 8, 499],
        [`${day}T03:00:00.000Z`, 51, 9, 9_999],
      ]);
      expect((await stored(3_600_000))[3]).toEqual([`${day}T03:00:00.000Z`, 51]);
      expect(await stored(86_400_000)).toEqual([]);
      expect((await service.apiJson(`/v1/history/latency?${wholeDay}`)).items.map((b: Bucket) => b.count)).toEqual([101]);
    });
  });

  it('should need an API key', async () => {
    expect((await service.api('/v1/history/latency', { key: null })).status).toBe(401);
  });
});

describe(`${LatencyController.name} end to end`, () => {
  it('should count the attempts the dispatcher recorded for a batch', async () => {
    const service = await startTestService();
    const receiver = await Receiver.start();
    try {
      const sleeps = [0, 50, 100, 150];
      const res = await service.apiJson('/v1/batches', {
        method: 'POST',
        json: { callbacks: [...sleeps.map((s) => ({ url: `${receiver.url}/?sleep=${s}` })), { url: `${receiver.url}/?code=404` }] },
      });
      await waitFor(async () => (await service.apiJson(`/v1/batches/${res.id}`)).status === 'completed');
      const history = await service.apiJson(`/v1/history/latency?batch=${res.id}&bucket=1d`);
      expect(history.items).toHaveLength(1);
      expect(history.items[0]).toMatchObject({ count: 5, ok: 4, failed: 1 });
      expect(history.items[0].max).toBeGreaterThanOrEqual(150);
      // the slowest attempt's recorded time, whatever a busy machine added to it
      const attempts = await Promise.all(
        res.callbacks.map(async (c: { id: string }) => (await service.apiJson(`/v1/callbacks/${c.id}`)).attempts[0].durationMs),
      );
      expect(history.items[0].max).toBeCloseTo(Math.max(...attempts), 0);
    } finally {
      await service.dispose();
      await receiver.close();
    }
  });
});
