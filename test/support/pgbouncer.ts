// The PgBouncer of the tests behind a pooler (TEST_PGBOUNCER=1, *.pgbouncer.test.ts):
// one implementation, in scripts/, shared with the benchmark of the same.
export { PGBOUNCER, startPgBouncer } from '../../scripts/pgbouncer.mjs';
export type { PgBouncer, PgBouncerOptions } from '../../scripts/pgbouncer.mjs';
