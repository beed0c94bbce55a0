// What one delivered callback costs Postgres, phase by phase, for the plan past one
// primary (ARCHITECTURE.md, "Past one Postgres"): N callbacks ingested through the API
// (batches of 500, the shape of steady traffic), then drained by one worker (default
// settings) into 50 receivers that answer at once, then purged by retention (their time partitions dropped). For each phase, per
// callback: rows written (inserted, updated, deleted; the HOT share of the updates),
// index entries written, at most (inserts and non-HOT updates times each table's
// indexes: a partial index takes only its rows; the deletes' are vacuum's later), index entries read, WAL records and bytes
// (pg_stat_wal), and Postgres CPU (all its processes, autovacuum included).
//   node bench/cost.bench.mjs     (BENCH_N; DATABASE_URL for another server)
import { setTimeout as sleep } from 'node:timers/promises';
import { postgresCpuMs } from './lib/cpu.mjs';
import { BENCH_KEY, backendPidOf, connect, distModule, freshDatabase, main, row, startService, waitUntil } from './lib/harness.mjs';
import { HISTORY_RETENTION_HOURS, partitionRepositoryOn } from './lib/seed.mjs';
import { BenchReceiver } from './lib/receiver.mjs';

const N = Number(process.env.BENCH_N ?? 20_000);
/** Destinations the callbacks go to, round-robin, each at the default cap (HOST_MAX_IN_FLIGHT 20): many, as in production. */
const HOSTS = Array.from({ length: 50 }, (_, i) => `127.0.12.${i + 1}`);
const PER_BATCH = 500;
/**
 * Postgres flushes an idle backend's table and WAL counters within 10 s
 * (PGSTAT_IDLE_INTERVAL); a snapshot taken sooner counted the ingest's rows in the
 * dispatch.
 */
const STATS_SETTLE_MS = 11_000;

/** Counters of the whole database now (cumulative). */
async function snapshot(db, backendPid) {
  await sleep(STATS_SETTLE_MS);
  const tables = (
    await db.query(`
      SELECT t.relname, t.n_tup_ins::float8 AS ins, t.n_tup_upd::float8 AS upd, t.n_tup_hot_upd::float8 AS hot, t.n_tup_del::float8 AS del,
             (SELECT count(*)::int FROM pg_index i WHERE i.indrelid = t.relid) AS indexes,
             coalesce((SELECT sum(i.idx_tup_read)::float8 FROM pg_stat_user_indexes i WHERE i.relid = t.relid), 0) AS idx_read
      FROM pg_stat_user_tables t`)
  ).rows;
  const wal = (await db.query(`SELECT wal_records::float8 AS records, wal_bytes::float8 AS bytes FROM pg_stat_wal`)).rows[0];
  return { tables: new Map(tables.map((t) => [t.relname, t])), wal, cpuMs: postgresCpuMs(backendPid) };
}

/** Per-callback costs between two snapshots. */
function costs(before, after, n) {
  const sum = { ins: 0, upd: 0, hot: 0, del: 0, idxWritten: 0, idxRead: 0 };
  const byTable = [];
  for (const [name, a] of after.tables) {
    const b = before.tables.get(name) ?? { ins: 0, upd: 0, hot: 0, del: 0, idx_read: 0 };
    const d = { ins: a.ins - b.ins, upd: a.upd - b.upd, hot: a.hot - b.hot, del: a.del - b.del, idxRead: a.idx_read - b.idx_read };
    const idxWritten = (d.ins + d.upd - d.hot) * a.indexes;
    if (d.ins + d.upd + d.del === 0 && d.idxRead === 0) continue;
    byTable.push(`${name} ${[d.ins && `+${d.ins}`, d.upd && `~${d.upd} (${d.hot} HOT)`, d.del && `-${d.del}`].filter(Boolean).join(' ')}`);
    for (const k of ['ins', 'upd', 'hot', 'del', 'idxRead']) sum[k] += d[k];
    sum.idxWritten += idxWritten;
  }
  return {
    rows: (sum.ins + sum.upd + sum.del) / n,
    hotShare: sum.upd ? sum.hot / sum.upd : 0,
    idxWritten: sum.idxWritten / n,
    idxRead: sum.idxRead / n,
    walRecords: (after.wal.records - before.wal.records) / n,
    walBytes: (after.wal.bytes - before.wal.bytes) / n,
    cpuUs: ((after.cpuMs - before.cpuMs) * 1000) / n,
    byTable: byTable.join('; '),
  };
}

async function ingest(api, receiver, n) {
  for (let from = 0; from < n; from += PER_BATCH) {
    const callbacks = Array.from({ length: Math.min(PER_BATCH, n - from) }, (_, k) => ({
      url: `${receiver.url(HOSTS[(from + k) % HOSTS.length])}/hook`,
      body: { event: 'cost', n: from + k },
    }));
    const res = await fetch(`${api.url}/v1/batches`, {
      method: 'POST',
      headers: { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ callbacks }),
    });
    const answer = await res.text();
    if (res.status !== 202) throw new Error(`ingest answered ${res.status}: ${answer}`);
  }
}

/**
 * Moves every finished callback, its attempts and its batch 40 days back, into time
 * partitions of the default width made there (PartitionRepository, partitionsToMake),
 * then vacuums what the move left, so the purge that follows pays for no part of it.
 * The migration's empty `attempt_before` (MINVALUE to when the database was made) goes
 * first, or the moved attempts would land in it.
 */
async function monthOld(db) {
  const { partitionWidthMs, partitionsToMake } = await distModule('retention/partition.policy.js');
  const repo = await partitionRepositoryOn(db);
  const width = partitionWidthMs(HISTORY_RETENTION_HOURS);
  const past = Date.now() - 40 * 86_400_000;
  for (const table of ['callback', 'attempt']) {
    for (const p of await repo.partitionsOf(table))
      if (p.name === 'attempt_before' && (await db.query('SELECT NOT EXISTS (SELECT 1 FROM attempt_before) AS e')).rows[0].e)
        await repo.dropPartition(table, p.name, p.detaching);
    await repo.makePartitions(table, (existing) => partitionsToMake(existing, past, width));
  }
  await db.query(`UPDATE callback SET completed_at = completed_at - interval '40 days', done_at = done_at - interval '40 days' WHERE done_at <> 'infinity'`);
  await db.query(`UPDATE attempt SET started_at = started_at - interval '40 days'`);
  await db.query(`UPDATE batch SET completed_at = completed_at - interval '40 days', created_at = created_at - interval '40 days'`);
  await db.query('VACUUM callback, attempt, batch');
}

/**
 * What the maintenance leader's retention pass does with them, by the service's own
 * code on this connection, so the figure is the drops and not a worker's start: the
 * partitions wholly before the default window's cutoff (partitionsToDrop), each
 * detached and dropped (PartitionRepository.dropPartition), then the empty completed
 * batches (RetentionRepository.purgeEmptyBatches).
 */
async function dropPastWindow(db) {
  const { partitionsToDrop } = await distModule('retention/partition.policy.js');
  const { RetentionRepository } = await distModule('retention/retention.repository.js');
  const repo = await partitionRepositoryOn(db);
  const cutoff = Date.now() - HISTORY_RETENTION_HOURS * 3_600_000;
  for (const table of ['callback', 'attempt'])
    for (const p of partitionsToDrop(await repo.partitionsOf(table), cutoff)) await repo.dropPartition(table, p.name, p.detaching);
  const batches = new RetentionRepository({ execute: async (s) => (await db.query(s.text, s.values)).rowCount });
  while ((await batches.purgeEmptyBatches(new Date(cutoff), 1000)) === 1000);
  const left = (await db.query(`SELECT (SELECT count(*) FROM callback)::int + (SELECT count(*) FROM attempt)::int AS n`)).rows[0].n;
  if (left !== 0) throw new Error(`${left} callbacks and attempts left after the drops`);
}

const count = async (db, where) => (await db.query(`SELECT count(*)::int AS n FROM callback WHERE ${where}`)).rows[0].n;

export async function costScenario(server, { n = N } = {}) {
  const databaseUrl = await freshDatabase(server, 'bench_cost');
  const receiver = await BenchReceiver.start({ hosts: HOSTS });
  const db = await connect(databaseUrl);
  const pid = await backendPidOf(db);
  const version = (await db.query(`SELECT current_setting('server_version') AS v`)).rows[0].v;
  // Retention off while the rows are made and sent; autovacuum as configured (its work is part of the cost).
  const api = await startService(databaseUrl, { ROLE: 'api' });
  const phases = [];
  try {
    // Warm-up turn (plans, JIT, the receiver), not counted.
    const warm = await startService(databaseUrl, { ROLE: 'worker', RETENTION_HOURS: '0' });
    await ingest(api, receiver, 2_000);
    await waitUntil(async () => (await count(db, `status IN ('pending', 'in_flight')`)) === 0, 60_000, 50);
    await warm.stop();

    // No worker runs while the rows come in; one starts (its own start counted, a few statements) once they are stored.
    let before = await snapshot(db, pid);
    await ingest(api, receiver, n);
    let after = await snapshot(db, pid);
    phases.push(['ingest (POST /v1/batches, 500 a batch)', costs(before, after, n)]);

    before = after;
    const worker = await startService(databaseUrl, { ROLE: 'worker', RETENTION_HOURS: '0' });
    try {
      await waitUntil(async () => (await count(db, `status IN ('pending', 'in_flight')`)) === 0, 300_000, 50);
    } finally {
      await worker.stop();
    }
    after = await snapshot(db, pid);
    phases.push(['dispatch (claim, send, write-back with its attempt, batch completion)', costs(before, after, n)]);

    // Everything finished is moved 40 days back (not counted), into time partitions made
    // there by the service's own code, as a month of history sits; then retention's own
    // statements (the default RETENTION_HOURS) drop those partitions whole.
    await monthOld(db);
    const stored = await count(db, 'true');
    before = await snapshot(db, pid);
    await dropPastWindow(db);
    after = await snapshot(db, pid);
    phases.push([`retention: the time partitions of ${stored.toLocaleString('en-US')} callbacks and their attempts dropped`, costs(before, after, stored)]);
  } finally {
    await db.end();
    await api.stop();
    await receiver.close();
  }

  const total = (k) => phases.reduce((s, [, c]) => s + c[k], 0);
  const out = [];
  for (const [label, c] of phases) {
    out.push(row(`${label}: Postgres CPU per callback (${version})`, c.cpuUs, 'µs', { higherIsBetter: false }));
    out.push(row(`  rows written per callback (${(100 * c.hotShare).toFixed(0)}% of updates HOT): ${c.byTable}`, c.rows, 'rows', { higherIsBetter: false }));
    out.push(
      row('  index entries written per callback, at most (every index of the table; partial ones take fewer)', c.idxWritten, 'entries', {
        higherIsBetter: false,
      }),
    );
    out.push(row('  index entries read per callback', c.idxRead, 'entries', { higherIsBetter: false }));
    out.push(row(`  WAL per callback (${c.walRecords.toFixed(1)} records)`, c.walBytes, 'bytes', { higherIsBetter: false }));
  }
  out.push(row(`whole life of one callback: Postgres CPU (${n.toLocaleString('en-US')} callbacks)`, total('cpuUs'), 'µs', { higherIsBetter: false }));
  out.push(row('  rows written', total('rows'), 'rows', { higherIsBetter: false }));
  out.push(row('  index entries written, at most', total('idxWritten'), 'entries', { higherIsBetter: false }));
  out.push(row('  WAL records', total('walRecords'), 'records', { higherIsBetter: false }));
  out.push(row('  WAL', total('walBytes'), 'bytes', { higherIsBetter: false }));
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(async (server) => costScenario(server));
}
