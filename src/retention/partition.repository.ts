import { Injectable } from '@nestjs/common';
import { databaseTimeoutOf } from '../database/database.errors.js';
import { PrismaService } from '../database/prisma.service.js';
import { Prisma } from '../generated/prisma/client.js';
import { partitionName, type PartitionBounds } from './partition.policy.js';

/**
 * The statements that make partition `name` of `table` for [from, to): a table like the
 * parent with the parent's indexes (`indexes`, from pg_indexes), named after it
 * (callback_due_idx: callback_20261203_170000_due_idx) so plans read alike, then
 * attached, which adopts them.
 */
export function partitionStatements(
  table: string,
  name: string,
  from: number,
  to: number,
  indexes: Array<{ indexname: string; indexdef: string }>,
): Prisma.Sql[] {
  const literal = (ms: number) => Prisma.raw(`'${new Date(ms).toISOString()}'`);
  return [
    Prisma.sql`CREATE TABLE ${Prisma.raw(name)} (LIKE ${Prisma.raw(table)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`,
    ...indexes.map(({ indexname, indexdef }) =>
      Prisma.raw(indexdef.replace(`INDEX ${indexname} ON ONLY public.${table} `, `INDEX ${name}_${indexname.slice(table.length + 1)} ON public.${name} `)),
    ),
    Prisma.sql`ALTER TABLE ${Prisma.raw(table)} ATTACH PARTITION ${Prisma.raw(name)} FOR VALUES FROM (${literal(from)}) TO (${literal(to)})`,
  ];
}

export interface PartitionRow {
  name: string;
  from_ms: number | null;
  to_ms: number | null;
  detaching: boolean;
}

/** `table`'s partitions from the catalog, with their bounds in epoch ms (null: MINVALUE / MAXVALUE; 'infinity' reads as Infinity). */
export const partitionsOfSql = (table: string) => Prisma.sql`
  SELECT c.relname AS name,
         extract(epoch FROM (regexp_match(b.expr, 'FROM \\(''([^'']+)''\\)'))[1]::timestamptz)::float8 * 1000 AS from_ms,
         extract(epoch FROM (regexp_match(b.expr, 'TO \\(''([^'']+)''\\)'))[1]::timestamptz)::float8 * 1000 AS to_ms,
         i.inhdetachpending AS detaching
  FROM pg_inherits i
  JOIN pg_class c ON c.oid = i.inhrelid
  CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS expr) b
  WHERE i.inhparent = ${table}::regclass`;

/** A row of `partitionsOfSql` as bounds. */
export const partitionBounds = (r: PartitionRow): PartitionBounds & { detaching: boolean } => ({
  name: r.name,
  from: r.from_ms === null ? null : Number(r.from_ms),
  to: r.to_ms === null ? null : Number(r.to_ms),
  detaching: r.detaching,
});

/**
 * How long one DROP of a detached partition waits for its locks before it gives way
 * (ms), and how many times a pass tries it (dropDetached). Below Postgres's
 * deadlock_timeout (1 s), so a drop in a lock cycle gives way before the other side's
 * deadlock check ends that one.
 */
const DROP_LOCK_TIMEOUT_MS = 200;
const DROP_TRIES = 10;

/** Session-level advisory lock key of partition changes, so two processes never make the same partition. */
const PARTITIONS_LOCK = 72707371;

type Runner = Pick<PrismaService, '$queryRaw' | '$executeRaw'>;

/**
 * The time partitions of the history tables (ARCHITECTURE.md, "History layout"):
 * listed from the catalog, made ahead, detached and dropped. Identifiers and bounds
 * are ours (table names of HISTORY_TABLES, instants), never a caller's text; DDL takes
 * no parameters, so they are written into the statement.
 */
@Injectable()
export class PartitionRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** `table`'s partitions with their bounds in epoch ms (null: MINVALUE / MAXVALUE), and whether a detach of it is pending. */
  async partitionsOf(table: string, db: Runner = this.prisma): Promise<Array<PartitionBounds & { detaching: boolean }>> {
    const rows = await db.$queryRaw<PartitionRow[]>(partitionsOfSql(table));
    return rows.map(partitionBounds);
  }

  /**
   * Makes the partitions `decide` asks for, given the partitions as they are under the
   * lock: each a table like the parent, then attached (SHARE UPDATE EXCLUSIVE on the
   * parent, which reads and writes pass; an empty table is checked at once). Returns
   * the names made.
   */
  async makePartitions(table: string, decide: (existing: PartitionBounds[]) => Array<{ from: number; to: number }>): Promise<string[]> {
    return this.prisma.$transaction(
      async (tx) => {
        await tx.$executeRaw(Prisma.sql`SELECT pg_advisory_xact_lock(${PARTITIONS_LOCK}::int, hashtext(${table})::int)`);
        const made: string[] = [];
        const todo = decide(await this.partitionsOf(table, tx));
        const indexes = todo.length
          ? await tx.$queryRaw<Array<{ indexname: string; indexdef: string }>>(
              Prisma.sql`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = ${table}`,
            )
          : [];
        for (const { from, to } of todo) {
          const name = partitionName(table, from);
          for (const statement of partitionStatements(table, name, from, to, indexes)) await tx.$executeRaw(statement);
          made.push(name);
        }
        return made;
      },
      { timeout: 60_000 },
    );
  }

  /**
   * Detaches `name` from `table` without blocking reads or writes of the parent
   * (`CONCURRENTLY`: two transactions, waiting for those that may still see it; a
   * detach a stop interrupted is finished instead), then drops it. No row is deleted:
   * no dead tuples, no vacuum.
   */
  async dropPartition(table: string, name: string, detaching: boolean): Promise<void> {
    await this.prisma.$executeRaw(
      Prisma.sql`ALTER TABLE ${Prisma.raw(table)} DETACH PARTITION ${Prisma.raw(name)} ${Prisma.raw(detaching ? 'FINALIZE' : 'CONCURRENTLY')}`,
    );
    await this.dropDetached(name);
  }

  /**
   * Drops a detached partition, giving way to the service's own traffic. DROP TABLE of
   * a table with foreign keys takes ACCESS EXCLUSIVE on the tables they reference
   * (their triggers go): for `callback`'s, on `receiver` (`batch_id` has had no foreign
   * key since migration callback_batch_no_fkey; with it, an ingest, which held `batch`
   * and waited for `receiver`, closed a cycle with the drop). While it waits, every
   * statement that reads or writes `receiver` queues behind it (ingests naming
   * receivers, write-backs of their callbacks, receiver reads). So each
   * try waits at most DROP_LOCK_TIMEOUT_MS (`SET LOCAL lock_timeout`, in its own
   * transaction), then gives way for a pause, up to DROP_TRIES tries; a table every
   * try missed stays, detached, for the next pass (detachedLeftovers).
   */
  async dropDetached(name: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const client = await this.prisma.pool.connect();
      let broken: Error | undefined;
      try {
        await client.query(`BEGIN; SET LOCAL lock_timeout = '${DROP_LOCK_TIMEOUT_MS}ms'`);
        await client.query(`DROP TABLE ${name}`);
        await client.query('COMMIT');
        return;
      } catch (error) {
        await client.query('ROLLBACK').catch((e: Error) => (broken = e));
        if (attempt >= DROP_TRIES || databaseTimeoutOf(error) !== 'lock') throw error;
      } finally {
        client.release(broken);
      }
      await new Promise((resolve) => setTimeout(resolve, DROP_LOCK_TIMEOUT_MS * (1 + Math.random())));
    }
  }

  /**
   * Tables named as `table`'s partitions that are no longer partitions: detached by a
   * pass that stopped, or whose every drop gave way, before the drop. Read from the
   * catalog; `name` is only ever partitionName's `<table>_<yyyymmdd>_<hhmmss>`.
   */
  async detachedLeftovers(table: string): Promise<string[]> {
    const rows = await this.prisma.$queryRaw<Array<{ name: string }>>(Prisma.sql`
      SELECT c.relname AS name FROM pg_class c
      WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' AND NOT c.relispartition
        AND c.relname ~ ${`^${table}_[0-9]{8}_[0-9]{6}$`}
      ORDER BY c.relname`);
    return rows.map((r) => r.name);
  }
}
