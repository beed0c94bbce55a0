import { Prisma } from '../../generated/prisma/client.js';

/**
 * "Now" in a time-sensitive statement: the database's clock (`now()`, the start of
 * the transaction), or `at` when given, so tests set the time instead of rewriting
 * rows' timestamps. The service never passes `at`: every worker then reads one
 * clock, the database's, whatever the skew between machines.
 */
export const nowSql = (at?: Date): Prisma.Sql => (at ? Prisma.sql`${at}::timestamptz` : Prisma.sql`now()`);
