import pg from 'pg';
import type { Prisma } from '../generated/prisma/client.js';
import { transientConflictOf } from './database.errors.js';
import { statementNamer } from './statement.names.js';

/** How long a statement waits for a free connection before it fails (as "database unavailable"). */
const CONNECT_TIMEOUT_MS = 5000;

/**
 * A connection pool of the service. A connection cut while idle (database restart)
 * is dropped from the pool (`onIdleError` is told); the next statement opens a new
 * one, or fails and is answered 503 (API) or retried (dispatcher). No startup `-c` options: a pooler
 * refuses them. `session`: settings each new connection sets for its session before
 * its first statement (sessionSettings), only for a direct connection; otherwise a
 * statement sets what it needs in its own transaction (LocalSettings).
 */
export function openPool(databaseUrl: string, max: number, onIdleError: (error: Error) => void, session: LocalSettings = {}, answerWithinMs?: number): pg.Pool {
  const set = sessionSettings(session);
  // pg-pool awaits the promise onConnect returns before it hands the connection out,
  // and closes the connection if it rejects (its types say void).
  const onConnect = set ? (client: pg.ClientBase) => client.query(set) : undefined;
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    onConnect,
    // A connection cut off without a reset (a partition, a proxy that stopped forwarding) never answers: past this,
    // its statement fails and the connection is dropped, instead of holding a pool slot for good.
    ...(answerWithinMs !== undefined && { query_timeout: answerWithinMs }),
    keepAlive: true,
  });
  pool.on('error', onIdleError);
  return pool;
}

/**
 * Settings that hold for one statement's transaction only (`SET LOCAL`), by name:
 * constants of the code (never user input), e.g. `{ synchronous_commit: 'off' }`.
 * Through a transaction pooler they stay with the statement they were set for.
 */
export type LocalSettings = Readonly<Record<string, string>>;

const SETTING_NAME = /^[a-z_]+$/;
const SETTING_VALUE = /^[A-Za-z0-9_.]+$/;

/**
 * `SET …` of `settings` for the session: for pg-pool's `onConnect`, which runs it on
 * each new connection before the connection serves its first statement. For a
 * direct connection, where a session keeps them, so a statement needs no transaction
 * of its own to carry them. A connection whose SET fails is closed and its first
 * statement fails (and is retried), never run without them. Not behind a transaction
 * pooler: there a session's settings stay on whichever server connection ran the SET.
 */
export function sessionSettings(settings: LocalSettings): string {
  return Object.entries(settings)
    .map(([name, value]) => setting('SET', name, value))
    .join('; ');
}

function setting(verb: 'SET' | 'SET LOCAL', name: string, value: string): string {
  if (!SETTING_NAME.test(name) || !SETTING_VALUE.test(value)) throw new Error(`not a setting: ${name}=${value}`);
  return `${verb} ${name} TO ${value}`;
}

/**
 * `statement_timeout` and `lock_timeout` (DATABASE_STATEMENT_TIMEOUT_MS,
 * DATABASE_LOCK_TIMEOUT_MS), set on every session of the service's pools: a safety
 * net, so no statement runs, or waits for a lock, without end. The service's own
 * statements are each bounded far below (chunks of rows, index walks); one that
 * hits either fails with SQLSTATE 57014 or 55P03, logged, answered 503 `db_timeout`
 * by the API (databaseTimeoutOf) and retried by the worker. 0 leaves the server's own setting.
 */
/**
 * How long the client waits for any answer to a statement before it gives the
 * connection up: the statement timeout and 5 s more (the server cancels a slow
 * statement first; only a connection that no longer carries anything gets here).
 * Undefined without a statement timeout.
 */
export function answerWithinMs(config: { databaseStatementTimeoutMs: number }): number | undefined {
  return config.databaseStatementTimeoutMs > 0 ? config.databaseStatementTimeoutMs + 5000 : undefined;
}

export function timeoutSettings(config: { databaseStatementTimeoutMs: number; databaseLockTimeoutMs: number }): LocalSettings {
  return {
    ...(config.databaseStatementTimeoutMs > 0 && { statement_timeout: String(config.databaseStatementTimeoutMs) }),
    ...(config.databaseLockTimeoutMs > 0 && { lock_timeout: String(config.databaseLockTimeoutMs) }),
  };
}

/** `BEGIN; SET LOCAL …`: one simple-protocol round trip (exported for the plan tests, which explain statements as they run). */
export function beginWith(settings: LocalSettings): string {
  return ['BEGIN', ...Object.entries(settings).map(([name, value]) => setting('SET LOCAL', name, value))].join('; ');
}

/** The mean wait before a statement's first retry after a deadlock or serialization failure (PgStatements.retryConflicts), ms. */
const CONFLICT_RETRY_MS = 25;

/** Runs statements: a pool (each statement on any free connection) or one transaction's connection. */
export interface SqlRunner {
  /** Runs one statement and returns its rows. */
  query<T>(statement: Prisma.Sql): Promise<T[]>;
  /** Runs one statement and returns how many rows it changed. */
  execute(statement: Prisma.Sql): Promise<number>;
}

/**
 * Every raw statement of the service runs here: written as `Prisma.sql` templates
 * (every value a bound parameter), run straight on a `pg` pool (the driver under
 * Prisma's adapter) and prepared by name (statement.names.ts). Prisma Client keeps
 * the plain model reads and writes. Prisma's raw-query path serialises every
 * parameter to JSON and parses it back, then converts every result value, before
 * and after the same driver call: for the API's status read of 25 callbacks that
 * was ~0.4 ms of CPU per statement on top of pg's ~0.5 ms. Results come as pg
 * parses them: `timestamptz` as Date, `json` parsed, `int8` and `numeric` as
 * strings (cast counts to `int`).
 */
export class PgStatements implements SqlRunner {
  private readonly nameOf: (query: { sql: string }) => string;
  /** Behind a transaction pooler: no statement is prepared by name, and one with settings goes in one round trip (runInOneTrip). */
  private readonly unnamed: boolean;
  /** `BEGIN; SET LOCAL …` of the runner's settings, and of them with each statement's own (constants of the code), made once. */
  private readonly begin: string;
  private readonly beginWithOwn = new WeakMap<LocalSettings, string>();
  /** `BEGIN; SET LOCAL …` of a transaction(): the runner's settings and `transactionSettings`. */
  private readonly beginTransaction: string;
  private readonly beginTransactionWithOwn = new WeakMap<LocalSettings, string>();

  /**
   * `prefix` names this runner's prepared statements; it must differ from any other
   * namer's on the same pool. `null`: every statement unnamed (behind a transaction
   * pooler, where the next transaction may run on a server connection that never saw
   * the name). `settings` are set in the transaction of every statement this runner
   * sends: a statement alone then goes with its `SET LOCAL`s in one round trip when
   * unnamed (runInOneTrip), else it costs two more (BEGIN and SET in one, COMMIT);
   * `transactionSettings` only in those of transaction(), which sends BEGIN anyway
   * (so they cost nothing).
   */
  constructor(
    protected readonly pool: pg.Pool,
    prefix: string | null,
    private readonly settings: LocalSettings = {},
    private readonly transactionSettings: LocalSettings = {},
    /** How many times a statement run alone (query, execute) is run again after a deadlock or serialization failure (retryConflicts). */
    private readonly conflictRetries = 0,
  ) {
    this.unnamed = prefix === null;
    this.nameOf = prefix === null ? () => '' : statementNamer(prefix);
    this.begin = beginWith(settings);
    this.beginTransaction = beginWith({ ...settings, ...transactionSettings });
  }

  /** One statement's rows; `settings` on top of the runner's, for this statement only. */
  async query<T>(statement: Prisma.Sql, settings?: LocalSettings): Promise<T[]> {
    return (await this.retryConflicts(() => this.runAlone(statement, settings))).rows as T[];
  }

  async execute(statement: Prisma.Sql, settings?: LocalSettings): Promise<number> {
    return (await this.retryConflicts(() => this.runAlone(statement, settings))).rowCount ?? 0;
  }

  /**
   * Runs a statement alone in its transaction again, up to `conflictRetries` times,
   * when Postgres ended that transaction to resolve a deadlock or a serialization
   * failure (transientConflictOf): the transaction held that statement only and
   * was rolled back whole, so nothing of it was kept and running it again stores
   * nothing twice; it then reads the rows as the other transaction left them. The
   * waits are short and jittered (CONFLICT_RETRY_MS times the attempt), so two
   * statements that deadlocked do not meet again in step. A transaction() is never
   * retried here: its work may have done more than its statements.
   */
  private async retryConflicts(run: () => Promise<pg.QueryResult>): Promise<pg.QueryResult> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await run();
      } catch (error) {
        if (attempt > this.conflictRetries || !transientConflictOf(error)) throw error;
        await new Promise((resolve) => setTimeout(resolve, CONFLICT_RETRY_MS * attempt * (0.5 + Math.random())));
      }
    }
  }

  private runAlone(statement: Prisma.Sql, settings?: LocalSettings): Promise<pg.QueryResult> {
    const begin = this.beginFor(settings);
    if (begin === 'BEGIN') return run(this.pool, this.nameOf, statement); // nothing to set: no transaction needed
    if (this.unnamed) return runInOneTrip(this.pool, begin, statement);
    return this.onOneConnection(begin, (client) => run(client, this.nameOf, statement));
  }

  private beginFor(settings?: LocalSettings): string {
    if (!settings) return this.begin;
    let begin = this.beginWithOwn.get(settings);
    if (begin === undefined) this.beginWithOwn.set(settings, (begin = beginWith({ ...this.settings, ...settings })));
    return begin;
  }

  /**
   * Runs `work` in one transaction on one connection, with the runner's settings and
   * `settings`: committed when it resolves, rolled back when it throws. Keep it
   * short: it holds a pooled connection and whatever row locks its statements take
   * until it ends.
   */
  transaction<T>(work: (tx: SqlRunner) => Promise<T>, settings?: LocalSettings): Promise<T> {
    const nameOf = this.nameOf;
    let begin = this.beginTransaction;
    if (settings) {
      begin = this.beginTransactionWithOwn.get(settings) ?? beginWith({ ...this.settings, ...this.transactionSettings, ...settings });
      this.beginTransactionWithOwn.set(settings, begin);
    }
    return this.onOneConnection(begin, (client) =>
      work({
        query: async <R>(statement: Prisma.Sql) => (await run(client, nameOf, statement)).rows as R[],
        execute: async (statement: Prisma.Sql) => (await run(client, nameOf, statement)).rowCount ?? 0,
      }),
    );
  }

  private async onOneConnection<T>(begin: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    // A checked-out client has no listener of the pool's: a connection cut between two
    // of its statements (database restart, a pooler gone) would be an uncaught 'error'
    // and end the process. Noted here, the statement under way fails with it, and the
    // client is discarded on release (as pool.query does for its own).
    const cut = (error: Error) => (broken = error);
    client.on('error', cut);
    try {
      await client.query(begin);
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((e: Error) => (broken = e));
      throw error;
    } finally {
      client.off('error', cut);
      client.release(broken);
    }
  }
}

function run(on: pg.Pool | pg.PoolClient, nameOf: (query: { sql: string }) => string, statement: Prisma.Sql): Promise<pg.QueryResult> {
  const name = nameOf({ sql: statement.text }) || undefined;
  return on.query({ name, text: statement.text, values: statement.values });
}

/**
 * One statement with its `SET LOCAL`s (`begin`: `BEGIN; SET LOCAL …`) as a single
 * simple-protocol message, `SET LOCAL …; <statement>`, which the server runs as one
 * implicit transaction, ended (committed, or rolled back on failure) before it answers.
 * So the transaction never waits on this process, as it would between BEGIN, statement
 * and COMMIT, its row locks held until a busy event loop sends the COMMIT. Each statement
 * is planned after the SETs before it ran, so planner settings apply. The simple protocol
 * takes no parameters: each value is inlined as a quoted literal of unknown type, the
 * text pg sends for it (textOf), which the server types from its context as it types an
 * untyped bound parameter (pg sends every parameter untyped). Only for unnamed statements
 * (behind a transaction pooler), parsed and planned at every run anyway.
 */
export function runInOneTrip(pool: pg.Pool, begin: string, statement: Prisma.Sql): Promise<pg.QueryResult> {
  const sets = begin.replace(/^BEGIN(; )?/, '');
  return pool.query(`${sets}${sets ? '; ' : ''}${inlined(statement)}`).then((results: pg.QueryResult | pg.QueryResult[]) => {
    // pg answers a multi-statement query with one result per statement; the last is the statement's own
    return Array.isArray(results) ? results[results.length - 1] : results;
  });
}

/** The statement's text with each `$n` replaced by its value as a quoted literal (`NULL` for null). */
export function inlined(statement: Prisma.Sql): string {
  const values = statement.values;
  return statement.text.replace(/\$(\d+)/g, (placeholder, n: string) => {
    const i = Number(n) - 1;
    if (i < 0 || i >= values.length) throw new Error(`statement has no value for ${placeholder}`);
    const v = textOf(values[i]);
    return v === null ? 'NULL' : pg.escapeLiteral(v);
  });
}

/**
 * A parameter as the text pg sends for it when bound, so an inlined value reads as the
 * bound one would (test/db/pg-statements.test.ts compares them): null for null and
 * undefined; a Date as its instant (ISO 8601, UTC); a Buffer as bytea hex; an array as
 * an array literal, every element quoted and escaped (nested arrays nest); another
 * object as JSON; anything else as its string.
 */
function textOf(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) return v.toISOString();
  if (Buffer.isBuffer(v)) return `\\x${v.toString('hex')}`;
  if (Array.isArray(v)) return arrayText(v);
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

function arrayText(values: readonly unknown[]): string {
  const elements = values.map((e) => {
    if (Array.isArray(e)) return arrayText(e);
    const t = textOf(e);
    return t === null ? 'NULL' : `"${t.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
  });
  return `{${elements.join(',')}}`;
}
