import { createHash, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const HERE = path.dirname(fileURLToPath(import.meta.url));
/**
 * The migrations: `dist/migrations`, copied there by the build (scripts/build.mjs) so a
 * deployed dist/ needs nothing beside it; from the sources (tests), prisma/migrations.
 */
export const MIGRATIONS_DIR =
  [path.resolve(HERE, '../migrations'), path.resolve(HERE, '../../prisma/migrations')].find((d) => existsSync(d)) ?? path.resolve(HERE, '../migrations');

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
  /** Checksums of earlier texts of this migration that a database may have applied (`earlier-checksums` beside it): still applied. */
  earlier: string[];
  /** `-- migrate: outside a transaction`: each statement on its own (CREATE INDEX CONCURRENTLY cannot run in one). */
  outsideTransaction: boolean;
  /** `-- migrate: only when <query>`: run only if the query's first value is true; otherwise recorded as applied, nothing run. */
  onlyWhen: string | null;
}

const OUTSIDE_TRANSACTION = /^-- migrate: outside a transaction$/m;
const ONLY_WHEN = /^-- migrate: only when (.+)$/m;

/** A migration's statements, for one run outside a transaction: split after each `;` that ends a line (no function bodies there). */
export function statementsOf(sql: string): string[] {
  return sql
    .split(/;[ \t]*\n/)
    .map((s) => s.replace(/^\s*(--[^\n]*\n\s*)*/, '').trim())
    .filter((s) => s.length > 0)
    .map((s) => (s.endsWith(';') ? s.slice(0, -1) : s));
}

export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  if (!existsSync(dir)) throw new Error(`migrations folder not found: ${dir}`);
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(path.join(dir, d.name, 'migration.sql')))
    .map((d) => d.name)
    .sort()
    .map((name) => {
      const sql = readFileSync(path.join(dir, name, 'migration.sql'), 'utf8');
      const earlierFile = path.join(dir, name, 'earlier-checksums');
      const earlier = existsSync(earlierFile) ? (readFileSync(earlierFile, 'utf8').match(/^[0-9a-f]{64}$/gm) ?? []) : [];
      return {
        name,
        sql,
        checksum: createHash('sha256').update(sql).digest('hex'),
        earlier,
        outsideTransaction: OUTSIDE_TRANSACTION.test(sql),
        onlyWhen: ONLY_WHEN.exec(sql)?.[1] ?? null,
      };
    });
}

/**
 * Applies pending migrations from prisma/migrations and records each in
 * `_prisma_migrations` exactly as `prisma migrate deploy` does, so the Prisma CLI
 * agrees on machines that have its engine. An advisory lock makes concurrent
 * start-ups (API and workers booting together) apply each migration once. Each
 * migration runs in its own transaction, unless its text says `-- migrate: outside a
 * transaction`: then its statements run one by one, each its own transaction, and a
 * failure leaves it unrecorded (its statements must be safe to run again). One whose
 * `-- migrate: only when <query>` answers false is recorded without running. Returns
 * the names applied now.
 */
export async function migrate(databaseUrl: string, migrations = readMigrations()): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock(72707370)');
    await client.query(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
      "id" VARCHAR(36) PRIMARY KEY NOT NULL,
      "checksum" VARCHAR(64) NOT NULL,
      "finished_at" TIMESTAMPTZ,
      "migration_name" VARCHAR(255) NOT NULL,
      "logs" TEXT,
      "rolled_back_at" TIMESTAMPTZ,
      "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
      "applied_steps_count" INTEGER NOT NULL DEFAULT 0)`);
    const { rows } = await client.query<{ migration_name: string; checksum: string }>(
      `SELECT migration_name, checksum FROM "_prisma_migrations"
       WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
    );
    const done = new Map(rows.map((r) => [r.migration_name, r.checksum]));
    for (const m of migrations) {
      const seen = done.get(m.name);
      if (seen !== undefined) {
        if (seen !== m.checksum && !m.earlier.includes(seen)) throw new Error(`migration ${m.name} was edited after it was applied`);
        continue;
      }
      if (m.onlyWhen !== null && !Object.values((await client.query(m.onlyWhen)).rows[0] ?? {})[0]) {
        await client.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, finished_at, logs) VALUES ($1, $2, $3, now(), now(), 'not needed here')`,
          [randomUUID(), m.checksum, m.name],
        );
        continue;
      }
      if (m.outsideTransaction) {
        try {
          for (const statement of statementsOf(m.sql)) await client.query(statement);
        } catch (error) {
          throw new Error(`migration ${m.name} failed: ${(error as Error).message}`);
        }
        await client.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, finished_at, applied_steps_count) VALUES ($1, $2, $3, now(), now(), 1)`,
          [randomUUID(), m.checksum, m.name],
        );
        applied.push(m.name);
        continue;
      }
      await client.query('BEGIN');
      try {
        const id = randomUUID();
        await client.query(`INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at) VALUES ($1, $2, $3, now())`, [id, m.checksum, m.name]);
        await client.query(m.sql);
        await client.query(`UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1`, [id]);
        await client.query('COMMIT');
        applied.push(m.name);
      } catch (error) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${m.name} failed: ${(error as Error).message}`);
      }
    }
  } finally {
    // The connection closes next, which releases the lock anyway; the migration's own error, if any, is the one thrown.
    await client.query('SELECT pg_advisory_unlock(72707370)').catch(() => undefined);
    await client.end();
  }
  return applied;
}
