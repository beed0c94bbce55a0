/**
 * Whether an error means "the database cannot be reached right now" (server down,
 * restarting, connections cut) rather than a bad query. Those are answered 503 and
 * retried by the worker; anything else is a bug.
 */
const UNAVAILABLE_CODES = new Set([
  'P1001',
  'P1002',
  'P1008',
  'P1017',
  'P2024', // Prisma: can't reach, timed out, closed, pool timeout
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08003',
  '08006',
  '08001',
  '08004', // admin shutdown, cannot connect now, connection failures
]);
const UNAVAILABLE_TEXT =
  /ECONNREFUSED|ECONNRESET|Connection terminated|terminating connection|connection (is )?closed|Can't reach database|server closed the connection|the database system is (starting up|shutting down)|Timed out fetching a new connection|timeout exceeded when trying to connect/i;

export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e = error as { code?: unknown; cause?: unknown; message?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string' && UNAVAILABLE_CODES.has(e.code)) return true;
    if (typeof e.message === 'string' && UNAVAILABLE_TEXT.test(e.message)) return true;
  }
  return false;
}

/** callback.receiver_id's foreign key, on callback_live (migration callback_receiver_fkey_live): a receiver deleted while callbacks naming it were stored. */
export const CALLBACK_RECEIVER_FKEY = 'callback_live_receiver_id_fkey';

/** Whether `error` is Postgres refusing a row for the foreign key `constraint` (SQLSTATE 23503). */
export function isForeignKeyViolation(error: unknown, constraint: string): boolean {
  for (let e = error as { code?: unknown; constraint?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (e.code === '23503' && e.constraint === constraint) return true;
  }
  return false;
}

/**
 * Whether `error` is a statement cancelled by the session's `statement_timeout`
 * (SQLSTATE 57014, "canceling statement due to statement timeout") or `lock_timeout`
 * (55P03): answered 503 `db_timeout` by the API, retried by the worker.
 */
export function databaseTimeoutOf(error: unknown): 'statement' | 'lock' | undefined {
  for (let e = error as { code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (e.code === '55P03') return 'lock';
    if (e.code === '57014' && typeof e.message === 'string' && /statement timeout/.test(e.message)) return 'statement';
  }
  return undefined;
}

/**
 * Whether `error` is Postgres ending a transaction to resolve a conflict with another:
 * a deadlock (SQLSTATE 40P01) or a serialization failure (40001, which includes "tuple
 * to be locked was already moved to another partition due to concurrent update": a row
 * of `callback` moved between its partitions by a concurrent finish or retry). Nothing
 * of the failed transaction was kept, and the same work run again usually succeeds: a
 * statement alone in its transaction is retried (PgStatements), anything else is
 * answered 503 `db_conflict` with Retry-After (ErrorFilter), never 500.
 */
export function transientConflictOf(error: unknown): 'deadlock' | 'serialization' | undefined {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (e.code === '40P01') return 'deadlock';
    if (e.code === '40001') return 'serialization';
  }
  return undefined;
}
