// Postgres time per statement of one side's round, from pg_stat_statements, for the
// benches that say where a side's Postgres time goes (BENCH_STATEMENTS=1). The server
// has to load the module (shared_preload_libraries = 'pg_stat_statements'; the
// embedded one does not), and its counters are the server's, so sides are measured one
// after the other, each from a reset. Planning time shows only where the server also
// tracks it (pg_stat_statements.track_planning = on); otherwise its column reads 0.

/**
 * Makes the extension in `db` (its view is per database) and starts the counters;
 * throws when `db`'s server does not load the module (BENCH_STATEMENTS=1 needs it).
 */
export async function startCountingStatements(db) {
  try {
    await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await db.query('SELECT pg_stat_statements_reset()');
  } catch {
    throw new Error('BENCH_STATEMENTS=1: the server does not load pg_stat_statements (shared_preload_libraries)');
  }
}

/** Starts the counters of every database of the server again. */
export const resetStatements = (db) => db.query('SELECT pg_stat_statements_reset()');

/**
 * `db`'s database's statements since the reset, the most time first, per callback
 * of the `n` the round moved: µs of execution (nested statements, such as a foreign
 * key's check, also count in the statement that ran them), µs of planning and plans
 * made, calls and rows, WAL records, and the statement's first characters. Utility
 * statements (VACUUM, transaction control) left out.
 */
export async function statementTimes(db, n, limit = 8) {
  const { rows } = await db.query(
    `SELECT round((total_exec_time * 1000 / $1)::numeric, 1)::float8 AS us, (calls::float8 / $1)::numeric(10, 3)::float8 AS calls,
            (rows::float8 / $1)::numeric(10, 2)::float8 AS rows, (wal_records::float8 / $1)::numeric(10, 2)::float8 AS wal,
            round((total_plan_time * 1000 / $1)::numeric, 1)::float8 AS plan_us, (plans::float8 / $1)::numeric(10, 3)::float8 AS plans,
            left(regexp_replace(query, '\\s+', ' ', 'g'), 90) AS statement
     FROM pg_stat_statements
     WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND toplevel
       AND query !~* '^\\s*(vacuum|analyze|begin|commit|rollback|set|select pg_stat_statements)'
     ORDER BY total_exec_time DESC LIMIT $2`,
    [n, limit],
  );
  const total = await db.query(
    `SELECT round((sum(total_exec_time) * 1000 / $1)::numeric, 1)::float8 AS us FROM pg_stat_statements
     WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND toplevel
       AND query !~* '^\\s*(vacuum|analyze|select pg_stat_statements)'`,
    [n],
  );
  return { total: total.rows[0].us, rows };
}

/** One side's statementTimes as a Markdown table under `title`. */
export function printStatementTable(title, { total, rows }) {
  console.log(`\n${title}; Postgres execution time per callback by statement, ${total} µs in all`);
  console.log('| µs | planning µs | plans | calls | rows | WAL records | statement |\n| ---: | ---: | ---: | ---: | ---: | ---: | --- |');
  for (const s of rows) console.log(`| ${s.us} | ${s.plan_us} | ${s.plans} | ${s.calls} | ${s.rows} | ${s.wal} | \`${s.statement.replaceAll('|', '\\|')}\` |`);
}
