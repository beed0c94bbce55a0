import { randomBytes } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { givenReplicaPair, startReplicaPair, type ReplicaPair } from '../support/replica.js';
import { jsonOf, startTestService, waitFor, type TestService } from '../support/service.js';

/**
 * DATABASE_READ_URL on a real streaming replica (test/support/replica.ts: embedded,
 * or the pair TEST_PG_REPLICA names, as .ci/run's on Debian's 15): an API
 * process (ROLE=api) whose lists and latency history are read there, by key, with
 * the read after a write kept correct, and the replica skipped while it lags or is
 * down. Where each statement ran is read from pg_stat_statements on both servers.
 */
const MAX_LAG_MS = 5000;

/** The statements of the reads this file makes, as pg_stat_statements shows them (Prisma's and the raw ones). */
const READ_TABLES = /"batch"|"callback"|\bcallback\b|\battempt\b|"event"|\breceiver\b|"host"|\bhost\b|latency_rollup|gone_endpoint/i;

describe('reads off the primary (DATABASE_READ_URL)', () => {
  let pair: ReplicaPair;
  let service: TestService;
  let primary: pg.Client;
  let replica: pg.Client;
  let other: { id: string; key: string };

  /** Calls of each statement touching the read tables on one server (pg_stat_statements, this database), by its text. */
  const readCalls = async (client: pg.Client): Promise<Map<string, number>> => {
    const { rows } = await client.query<{ query: string; calls: string }>(
      `SELECT query, calls FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
    const reads = rows.filter((r) => READ_TABLES.test(r.query) && !/pg_stat_statements|pg_current_wal_lsn|pg_last_wal_replay_lsn/.test(r.query));
    return new Map(reads.map((r) => [r.query, Number(r.calls)]));
  };
  /** The statements that ran between two counts, with how many times. */
  const ranBetween = (before: Map<string, number>, after: Map<string, number>): { calls: number; queries: string[] } => {
    const ran = [...after].map(([query, n]) => [query, n - (before.get(query) ?? 0)] as const).filter(([, n]) => n > 0);
    return { calls: ran.reduce((sum, [, n]) => sum + n, 0), queries: ran.map(([query, n]) => `${n}x ${query.slice(0, 120)}`) };
  };
  const ready = async () => {
    const res = await fetch(`${service.url}/health/ready`);
    return { status: res.status, body: await jsonOf(res) };
  };
  const metrics = async () => (await fetch(`${service.url}/metrics`)).text();
  const batchIdsOf = async (key: string) =>
    (await jsonOf(await service.api('/v1/batches?limit=50', { key }))).items.map((b: { id: string }) => b.id) as string[];

  beforeAll(async () => {
    const given = process.env.TEST_PG_REPLICA;
    pair = given ? await givenReplicaPair(JSON.parse(given)) : await startReplicaPair(path.resolve(`.data/replica-${randomBytes(4).toString('hex')}`));
    primary = new pg.Client({ connectionString: pair.primaryUrl });
    await primary.connect();
    await primary.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    service = await startTestService({ role: 'api', databaseReadUrl: pair.replicaUrl, databaseReadMaxLagMs: MAX_LAG_MS }, pair.primaryUrl);
    replica = new pg.Client({ connectionString: pair.replicaUrl });
    await replica.connect();
    other = await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'tenant b', allowPrivateNetworks: true } });
    // The key's data: a receiver, a batch of pending callbacks (no worker here), an event.
    const put = await service.api('/v1/receivers/orders', { method: 'PUT', key: other.key, json: { url: 'http://127.0.0.9:9/orders' } });
    expect(put.status, await put.clone().text()).toBeLessThan(300);
    const batch = await service.api('/v1/batches', {
      method: 'POST',
      key: other.key,
      json: { callbacks: Array.from({ length: 20 }, (_, i) => ({ url: `http://127.0.0.9:9/cb/${i}`, body: { i } })) },
    });
    expect(batch.status).toBe(202);
  }, 120_000);

  afterAll(async () => {
    await replica?.end().catch(() => undefined);
    await primary?.end();
    await service?.dispose();
    await pair?.stop();
  });

  it('should read lists, hosts and the latency history on the replica: 1,000 reads leave the primary without one', async () => {
    // Once the replica has the key's writes, its reads go there.
    await waitFor(async () => {
      const before = await readCalls(replica);
      await service.api('/v1/batches', { key: other.key });
      return ranBetween(before, await readCalls(replica)).calls > 0;
    });
    expect((await ready()).body.replica).toMatchObject({ state: 'up' });
    expect(await metrics()).toMatch(/^read_replica_state\{state="up"\} 1$/m);
    const primaryBefore = await readCalls(primary);
    const replicaBefore = await readCalls(replica);
    const paths = ['/v1/batches?limit=10', '/v1/callbacks?limit=10', '/v1/history/latency', '/v1/hosts', '/v1/events', '/v1/receivers'];
    for (let i = 0; i < 1000; i++) {
      const res = await service.api(paths[i % paths.length], { key: other.key });
      expect(res.status, `${paths[i % paths.length]}: ${await res.clone().text()}`).toBe(200);
      await res.arrayBuffer();
    }
    const onPrimary = ranBetween(primaryBefore, await readCalls(primary));
    expect(onPrimary.calls, onPrimary.queries.join('\n')).toBe(0);
    expect(ranBetween(replicaBefore, await readCalls(replica)).calls).toBeGreaterThanOrEqual(1000);
    // What the lists say is the key's data, read there.
    const callbacks = await service.apiJson('/v1/callbacks?limit=100', { key: other.key });
    expect(callbacks.items).toHaveLength(20);
    expect((await service.apiJson('/v1/receivers', { key: other.key })).items.map((r: { name: string }) => r.name)).toEqual(['orders']);
  });

  it("should answer a key's read after its own write from the primary while the replica is behind, and skip a replica past the max lag", async () => {
    await replica.query('SELECT pg_wal_replay_pause()');
    try {
      // A batch of the other key written past the API: the paused replica does not have it, and its reads go there.
      const {
        rows: [hidden],
      } = await primary.query<{ id: string }>(`INSERT INTO batch (id, api_key_id, total) VALUES (gen_random_uuid(), $1, 0) RETURNING id`, [other.id]);
      expect(await batchIdsOf(other.key)).not.toContain(hidden.id);
      // The test key writes through this process, then reads: each read sees its write.
      for (let i = 0; i < 5; i++) {
        const accepted = await service.apiJson('/v1/batches', { method: 'POST', json: { callbacks: [{ url: 'http://127.0.0.9:9/x', body: { i } }] } });
        expect(await batchIdsOf(service.key)).toContain(accepted.id);
      }
      const url = `http://127.0.0.9:9/changed-${randomBytes(3).toString('hex')}`;
      await service.api('/v1/receivers/orders', { method: 'PUT', json: { url } });
      expect((await service.apiJson('/v1/receivers')).items.find((r: { name: string }) => r.name === 'orders').url).toBe(url);
      // Past the max lag the replica is skipped for every key, and readiness says so without failing.
      const lagging = await waitFor(
        async () => {
          const r = await ready();
          return r.body.replica?.state === 'lagging' && r;
        },
        MAX_LAG_MS + 5000,
        100,
      );
      expect(lagging.status).toBe(200);
      expect(lagging.body.replica.lagMs).toBeGreaterThan(MAX_LAG_MS);
      expect(await batchIdsOf(other.key)).toContain(hidden.id);
    } finally {
      await replica.query('SELECT pg_wal_replay_resume()');
    }
    await waitFor(async () => (await ready()).body.replica?.state === 'up', 10_000, 100);
  });

  it('should answer reads from the primary within 2 s of the replica stopping, and use it again once it is back', async () => {
    await replica.end();
    await pair.stopReplica();
    const started = Date.now();
    const ids = await batchIdsOf(other.key);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(ids.length).toBeGreaterThan(0);
    const down = await ready();
    expect(down.status).toBe(200);
    expect(down.body.replica).toMatchObject({ state: 'down' });
    expect(await metrics()).toMatch(/^read_replica_state\{state="down"\} 1$/m);
    await pair.startReplica();
    replica = new pg.Client({ connectionString: pair.replicaUrl });
    await replica.connect();
    await waitFor(async () => (await ready()).body.replica?.state === 'up', 15_000, 100);
    const before = await readCalls(replica);
    await batchIdsOf(other.key);
    expect(ranBetween(before, await readCalls(replica)).calls).toBeGreaterThan(0);
  });
});
