import { readFileSync } from 'node:fs';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { BREAKER_STATES, CALLBACK_STATUSES, TASK_KINDS, TASK_STATUSES } from '../../src/model/states.js';
import { useTestDatabase } from '../support/database.js';

/**
 * The schema as the migrations build it, in a stable text form: tables with their
 * columns, then constraints, indexes, triggers and functions, each in name order.
 * Checked in as prisma/schema.sql, so a schema change shows in review; `npx vitest
 * run test/db/schema.test.ts -u` writes it anew after a migration.
 */
async function schemaDump(db: pg.Client): Promise<string> {
  const q = async (sql: string) => (await db.query(sql)).rows;
  const out: string[] = ['-- The schema the migrations in prisma/migrations build (test/db/schema.test.ts checks it).', ''];
  const columns = await q(`
    SELECT c.table_name, c.column_name, pg_catalog.format_type(a.atttypid, a.atttypmod) AS type,
           c.is_nullable = 'NO' AS not_null, c.column_default
    FROM information_schema.columns c
    JOIN pg_catalog.pg_attribute a ON a.attrelid = format('%I.%I', c.table_schema, c.table_name)::regclass AND a.attname = c.column_name
    WHERE c.table_schema = 'public' AND c.table_name <> '_prisma_migrations' AND NOT (SELECT relispartition FROM pg_class WHERE oid = a.attrelid)
    ORDER BY c.table_name, c.ordinal_position`);
  const tables = new Map<string, string[]>();
  for (const c of columns) {
    const def = `  ${c.column_name} ${c.type}${c.not_null ? ' NOT NULL' : ''}${c.column_default ? ` DEFAULT ${c.column_default}` : ''}`;
    tables.set(c.table_name, [...(tables.get(c.table_name) ?? []), def]);
  }
  for (const [table, defs] of tables) out.push(`CREATE TABLE ${table} (`, defs.join(',\n'), ');', '');
  // Partitions carry their parent's columns, constraints and indexes; the time partitions are the service's (src/retention), not the migrations'.
  for (const r of await q(`
    SELECT k.relname AS part, p.relname AS parent FROM pg_inherits i JOIN pg_class k ON k.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
    WHERE k.relispartition AND k.relkind = 'r' AND k.relnamespace = 'public'::regnamespace ORDER BY 2, 1`))
    out.push(`-- ${r.part}: a partition of ${r.parent}`);
  out.push('');
  for (const r of await q(`
    SELECT conrelid::regclass::text AS tbl, conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
    WHERE connamespace = 'public'::regnamespace AND conrelid <> 'public._prisma_migrations'::regclass
      AND (NOT (SELECT relispartition FROM pg_class WHERE oid = conrelid) OR (conparentid = 0 AND coninhcount = 0)) -- a partition's own, not its parent's
      AND contype <> 'n' -- NOT NULL, with the columns above (Postgres 18 also lists it as a constraint, 15 to 17 do not)
    ORDER BY 1, 2`))
    out.push(`ALTER TABLE ${r.tbl} ADD CONSTRAINT ${r.conname} ${r.def};`);
  out.push('');
  for (const r of await q(`
    SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename <> '_prisma_migrations'
      AND NOT (SELECT relispartition FROM pg_class WHERE oid = format('%I.%I', schemaname, tablename)::regclass)
    ORDER BY tablename, indexname`))
    out.push(`${r.indexdef};`);
  out.push('');
  for (const r of await q(`
    SELECT pg_get_triggerdef(t.oid) AS def FROM pg_trigger t
    WHERE NOT t.tgisinternal AND t.tgrelid::regclass::text NOT LIKE 'pg_%' ORDER BY t.tgrelid::regclass::text, t.tgname`))
    out.push(`${r.def};`);
  out.push('');
  for (const r of await q(`
    SELECT pg_get_functiondef(p.oid) AS def FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace ORDER BY p.proname`)) {
    out.push(`${r.def.trimEnd()};`, '');
  }
  return `${out.join('\n').trimEnd()}\n`;
}

interface PrismaField {
  column: string;
  type: string;
  optional: boolean;
  list: boolean;
  dbType?: string;
}

const SCALARS = new Set(['String', 'Int', 'BigInt', 'Float', 'Boolean', 'DateTime', 'Json', 'Decimal', 'Bytes']);
/** The Postgres types each Prisma scalar may map to here (the @db attribute narrows it). */
const PG_TYPES: Record<string, RegExp> = {
  String: /^(text|uuid|character varying.*)$/,
  Int: /^integer$/,
  BigInt: /^bigint$/,
  Float: /^double precision$/,
  Boolean: /^boolean$/,
  DateTime: /^timestamp\(\d\) with time zone$/,
  Json: /^jsonb$/,
};

/** What a @db attribute makes of the column. */
const DB_TYPES: Record<string, RegExp> = { Uuid: /^uuid$/, SmallInt: /^smallint$/ };

/** The tables and scalar columns schema.prisma declares (a small reader of its model blocks, enough for this schema). */
function prismaTables(text: string): Map<string, PrismaField[]> {
  const tables = new Map<string, PrismaField[]>();
  for (const [, , body] of text.matchAll(/^model (\w+) \{\n([\s\S]*?)^\}/gm)) {
    const table = /@@map\("(\w+)"\)/.exec(body)?.[1];
    if (!table) throw new Error('every model maps to a snake_case table (@@map)');
    const fields: PrismaField[] = [];
    for (const line of body.split('\n')) {
      const m = /^\s+(\w+)\s+(\w+)(\[\])?(\?)?(.*)$/.exec(line);
      if (!m || !SCALARS.has(m[2])) continue;
      fields.push({
        column: /@map\("(\w+)"\)/.exec(m[5])?.[1] ?? m[1],
        type: m[2],
        list: m[3] === '[]',
        optional: m[4] === '?',
        dbType: /@db\.(\w+)/.exec(m[5])?.[1],
      });
    }
    tables.set(table, fields);
  }
  return tables;
}

describe('database schema', () => {
  const t = useTestDatabase();

  it('should be what prisma/schema.sql says (after a migration: npx vitest run test/db/schema.test.ts -u)', async () => {
    await expect(await schemaDump(t.db)).toMatchFileSnapshot('../../prisma/schema.sql');
  });

  it('should have every table and column of schema.prisma, with its nullability and type, and no other', async () => {
    const declared = prismaTables(readFileSync(new URL('../../prisma/schema.prisma', import.meta.url), 'utf8'));
    const { rows } = await t.db.query(`
      SELECT c.table_name, c.column_name, c.is_nullable = 'YES' AS nullable, pg_catalog.format_type(a.atttypid, a.atttypmod) AS type
      FROM information_schema.columns c
      JOIN pg_catalog.pg_attribute a ON a.attrelid = format('%I.%I', c.table_schema, c.table_name)::regclass AND a.attname = c.column_name
      WHERE c.table_schema = 'public' AND c.table_name <> '_prisma_migrations' AND NOT (SELECT relispartition FROM pg_class WHERE oid = a.attrelid)`);
    const actual = new Map<string, Map<string, { nullable: boolean; type: string }>>();
    for (const r of rows) {
      if (!actual.has(r.table_name)) actual.set(r.table_name, new Map());
      actual.get(r.table_name)!.set(r.column_name, { nullable: r.nullable, type: r.type });
    }
    expect([...declared.keys()].sort()).toEqual([...actual.keys()].sort());
    for (const [table, fields] of declared) {
      const columns = actual.get(table)!;
      expect(fields.map((f) => f.column).sort(), `columns of ${table}`).toEqual([...columns.keys()].sort());
      for (const f of fields) {
        const col = columns.get(f.column)!;
        const where = `${table}.${f.column}`;
        if (f.list) {
          expect(col.type, where).toMatch(/\[\]$/);
          continue; // Prisma lists cannot be optional; a NULL list is the column's own choice
        }
        expect(col.nullable, `${where} nullable`).toBe(f.optional);
        expect(col.type, where).toMatch((f.dbType && DB_TYPES[f.dbType]) ?? PG_TYPES[f.type]);
      }
    }
  });

  it('should allow exactly the states of src/model/states.ts in its CHECK constraints', async () => {
    const allowed = async (constraint: string) => {
      const { rows } = await t.db.query(`SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = $1`, [constraint]);
      return [...rows[0].def.matchAll(/'([\w.]+)'::text/g)].map((m) => m[1]).sort();
    };
    expect(await allowed('callback_status_check')).toEqual([...CALLBACK_STATUSES].sort());
    expect(await allowed('host_breaker_state_check')).toEqual([...BREAKER_STATES].sort());
    expect(await allowed('host_key_breaker_state_check')).toEqual([...BREAKER_STATES].sort());
    expect(await allowed('task_kind_check')).toEqual([...TASK_KINDS].sort());
    expect(await allowed('task_status_check')).toEqual([...TASK_STATUSES].sort());
  });
});
