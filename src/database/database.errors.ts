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
// "Query read timeout": pg gave up on a connection that did not answer within its
// query_timeout (answerWithinMs: a connection cut off without a reset).
const UNAVAILABLE_TEXT =
  /ECONNREFUSED|ECONNRESET|Connection terminated|terminating connection|connection (is )?closed|Can't reach database|server closed the connection|the database system is (starting up|shutting down)|Timed out fetching a new connection|timeout exceeded when trying to connect|Query read timeout/i;

/** What an error in the chain below says of itself: its code and message (a driver error's original ones, as Prisma's adapter keeps them). */
interface Cause {
  code?: string;
  message?: string;
  constraint?: unknown;
}

/**
 * `error` and the errors beneath it, at most 6 deep: each `cause`, and where a
 * Prisma client error carries none, the driver adapter's error in its `meta`
 * (`meta.driverAdapterError`, whose cause keeps Postgres's `originalCode` and
 * `originalMessage`). A pg error reaches a raw statement as it is; through the Prisma
 * client it arrives only that way, so a check of `.cause` alone missed every lock
 * and statement timeout of a Prisma query (answered 500, not 503 `db_timeout`).
 */
function* causesOf(error: unknown): Generator<Cause> {
  let e = error as Record<string, unknown> | undefined;
  for (let depth = 0; e && typeof e === 'object' && depth < 6; depth++) {
    const code = typeof e.code === 'string' ? e.code : typeof e.originalCode === 'string' ? e.originalCode : undefined;
    const message = typeof e.originalMessage === 'string' ? e.originalMessage : typeof e.message === 'string' ? e.message : undefined;
    yield { code, message, constraint: e.constraint };
    const meta = e.meta as { driverAdapterError?: unknown } | undefined;
    e = (e.cause ?? meta?.driverAdapterError) as typeof e;
  }
}

export function isDatabaseUnavailable(error: unknown): boolean {
  for (const e of causesOf(error)) {
    if (e.code !== undefined && UNAVAILABLE_CODES.has(e.code)) return true;
    if (e.message !== undefined && UNAVAILABLE_TEXT.test(e.message)) return true;
  }
  return false;
}

/** callback.receiver_id's foreign key, on callback_live (migration callback_receiver_fkey_live): a receiver deleted while callbacks naming it were stored. */
export const CALLBACK_RECEIVER_FKEY = 'callback_live_receiver_id_fkey';

/** Whether `error` is Postgres refusing a row for the foreign key `constraint` (SQLSTATE 23503). */
export function isForeignKeyViolation(error: unknown, constraint: string): boolean {
  for (const e of causesOf(error)) {
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
  for (const e of causesOf(error)) {
    if (e.code === '55P03') return 'lock';
    if (e.code === '57014' && e.message !== undefined && /statement timeout/.test(e.message)) return 'statement';
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
  for (const e of causesOf(error)) {
    if (e.code === '40P01') return 'deadlock';
    if (e.code === '40001') return 'serialization';
  }
  return undefined;
}

/** Driver errors often start with a blank line; the first line with text says what happened. */
export function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (
    message
      .split('\n')
      .map((l) => l.trim())
      .find(Boolean) ??
    (error as { code?: string })?.code ??
    'unreachable'
  );
}
