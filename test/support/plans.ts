import { expect } from 'vitest';
import type { Prisma } from '../../src/generated/prisma/client.js';
import { beginWith, type LocalSettings } from '../../src/database/pg.statements.js';
import type pg from 'pg';
import { connect, createTestDatabase } from './database.js';
import { HISTORY_TABLES, partitionName, partitionsToMake } from '../../src/retention/partition.policy.js';
import { partitionBounds, partitionsOfSql, partitionStatements, type PartitionRow } from '../../src/retention/partition.repository.js';

/**
 * EXPLAIN ANALYZE of one statement as the service runs it: prepared by name, with a
 * custom plan and with the generic plan Postgres may switch to after five runs, under
 * the session settings given (the worker's, for the hot path), in a transaction that is
 * rolled back.
 */

export interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Total Cost'?: number;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}
export interface Explained {
  Plan: PlanNode;
  'Execution Time': number;
  JIT?: { Functions: number };
  mode: string;
}

/** Postgres's default `jit_above_cost`: a plan costed above it is JIT-compiled on a server with JIT (Debian's). */
export const JIT_ABOVE_COST = 100_000;

export function planNodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(planNodes)];
}

/**
 * One run per plan mode: what a plan reads does not change from run to run, where its
 * time on the shared machine does.
 */
export async function explainStatement(url: string, statement: Prisma.Sql, settings: LocalSettings = {}): Promise<Explained[]> {
  const session = await connect(url);
  const out: Explained[] = [];
  try {
    for (const mode of ['force_custom_plan', 'force_generic_plan']) {
      await session.query(beginWith({ ...settings, plan_cache_mode: mode }));
      await session.query(`PREPARE p AS ${statement.text}`);
      const args = statement.values.map((v) => (v === null || v === undefined ? 'NULL' : session.escapeLiteral(asText(v))));
      const execute = `EXECUTE p${args.length ? `(${args.join(', ')})` : ''}`;
      if (process.env.PLAN_DEBUG) console.log(mode, (await session.query(`EXPLAIN (ANALYZE) ${execute}`)).rows.map((r) => r['QUERY PLAN']).join('\n'));
      const { rows } = await session.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${execute}`);
      await session.query('ROLLBACK');
      await session.query('DEALLOCATE p');
      out.push({ ...(rows[0]['QUERY PLAN'][0] as Omit<Explained, 'mode'>), mode });
    }
  } finally {
    await session.end();
  }
  return out;
}

/**
 * Each run walks the `uses` indexes, reads neither the queue nor the history
 * sequentially, is not JIT-compiled, and reads at most `maxRows` rows (rowsRead). Unless
 * `jitOff` (a statement of the worker's sessions, which set `jit = off`), it is not
 * costed so that a server with JIT would compile it either.
 */
export function checkPlan(
  name: string,
  runs: Explained[],
  server: string,
  { uses, maxRows, jitOff = false }: { uses: string[]; maxRows: number; jitOff?: boolean },
): void {
  for (const run of runs) {
    const all = planNodes(run.Plan);
    const indexes = new Set(all.map((n) => n['Index Name']).filter(Boolean));
    const seqScans = all.filter((n) => n['Node Type'] === 'Seq Scan' && (n['Relation Name'] === 'callback' || n['Relation Name'] === 'attempt'));
    const where = `${name} (${run.mode}) on ${server}`;
    const read = rowsRead(run);
    console.log(
      `${where}: ${read} rows read, ${run['Execution Time'].toFixed(1)} ms, cost ${run.Plan['Total Cost']}, indexes ${[...indexes].join(' ')}${run.JIT ? ', JIT' : ''}`,
    );
    expect(run.JIT, `${where}: JIT-compiled (${run.JIT?.Functions} functions)`).toBeUndefined();
    if (!jitOff) expect(run.Plan['Total Cost'], `${where}: costed past jit_above_cost`).toBeLessThan(JIT_ABOVE_COST);
    for (const index of uses)
      expect(
        [...indexes].some((used) => indexMatches(used as string, index)),
        `${where}: uses ${index} (${[...indexes].join(' ')})`,
      ).toBe(true);
    expect(
      seqScans.map((n) => n['Relation Name']),
      `${where}: no sequential scan of the queue or the history`,
    ).toEqual([]);
    expect(read, `${where}: rows read`).toBeLessThanOrEqual(maxRows);
  }
}

/**
 * The rows a run read from tables and indexes: what each scan of a relation returned or
 * filtered out, over all its loops. A plan's work on the shared machine, where its time
 * is not: the claim's front read 5,094 rows (30–50 ms) with its planner settings and
 * 302,589 (424 ms) without them.
 */
export function rowsRead(run: Explained): number {
  return Math.round(
    planNodes(run.Plan)
      .filter((n) => n['Relation Name'] !== undefined)
      .reduce((sum, n) => sum + nodeRowsRead(n), 0),
  );
}

/** The rows one scan node returned or filtered out, over all its loops. */
export function nodeRowsRead(n: PlanNode): number {
  return ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0)) * (n['Actual Loops'] ?? 1);
}

/** A bound value as the text Postgres parses it (what pg would send). */
function asText(v: unknown): string {
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return `{${v.map((x) => (x === null ? 'NULL' : `"${String(x).replace(/(["\\])/g, '\\$1')}"`)).join(',')}}`;
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** A fresh test database for a plan test, with the history's partitions of a day: a client on it, its server (version and JIT setting) and two API keys. */
export async function planDatabase(): Promise<{ url: string; drop: () => Promise<void>; db: pg.Client; server: string; keys: string[] }> {
  const { url, drop } = await createTestDatabase();
  const db = await connect(url);
  await historyPartitions(db, 86_400_000);
  const server = (await db.query<{ s: string }>(`SELECT current_setting('server_version') || ' jit=' || current_setting('jit') AS s`)).rows[0].s;
  const keys = (
    await db.query<{ id: string }>(
      `INSERT INTO api_key (id, name, prefix, hash) SELECT gen_random_uuid(), 'k' || i, 'p' || i, md5(i::text || random()::text)
       FROM generate_series(1, 2) i RETURNING id`,
    )
  ).rows.map((r) => r.id);
  return { url, drop, db, server, keys };
}

/**
 * The history's time partitions a running service would have made (src/retention),
 * `widthMs` wide, from a width before `at` (default now; or where the last one ends)
 * to two widths after it, for a plan test's database, which no service starts on.
 */
export async function historyPartitions(db: pg.Client, widthMs: number, at = Date.now()): Promise<void> {
  for (const { table } of HISTORY_TABLES) {
    const statement = partitionsOfSql(table);
    const existing = (await db.query<PartitionRow>(statement.text, statement.values)).rows.map(partitionBounds);
    const indexes = (await db.query(`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = $1`, [table])).rows;
    for (const { from, to } of partitionsToMake(existing, at, widthMs)) {
      for (const statement of partitionStatements(table, partitionName(table, from), from, to, indexes)) await db.query(statement.text);
    }
  }
}

/**
 * Drops the migration's `attempt_before` (MINVALUE to when the database was made) when
 * it is there and empty, as in a fresh test database: it makes way for attempt
 * partitions of times before it.
 */
export async function dropEmptyAttemptBefore(db: pg.Client): Promise<void> {
  const there = await db.query(`SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass('attempt_before')`);
  if (!there.rowCount || (await db.query('SELECT 1 FROM attempt_before LIMIT 1')).rowCount) return;
  await db.query('ALTER TABLE attempt DETACH PARTITION attempt_before');
  await db.query('DROP TABLE attempt_before');
}

/**
 * Whether the plan's `used` index is `wanted` or its copy on a partition: the history's
 * partitions name their indexes after the parent's (callback_key_due_idx:
 * callback_live_key_due_idx, callback_20261203_000000_key_due_idx).
 */
export function indexMatches(used: string, wanted: string): boolean {
  if (used === wanted) return true;
  const table = HISTORY_TABLES.find(({ table }) => wanted.startsWith(`${table}_`))?.table;
  return table !== undefined && used.startsWith(`${table}_`) && used.endsWith(wanted.slice(table.length));
}

/** Autovacuum off for `tables`, on each partition of a partitioned one (a plan test's statistics stay as it made them). */
export async function autovacuumOff(db: pg.Client, ...tables: string[]): Promise<void> {
  for (const table of tables) {
    const { rows } = await db.query<{ t: string }>(
      `SELECT inhrelid::regclass::text AS t FROM pg_inherits WHERE inhparent = $1::text::regclass
       UNION ALL SELECT $1::text WHERE NOT EXISTS (SELECT 1 FROM pg_inherits WHERE inhparent = $1::text::regclass)`,
      [table],
    );
    for (const { t } of rows) await db.query(`ALTER TABLE ${t} SET (autovacuum_enabled = off)`);
  }
}
