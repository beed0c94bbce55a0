/** Debian's PgBouncer binary. */
export const PGBOUNCER: string;

export interface PgBouncer {
  /** Its process, for CPU readings. */
  pid: number | undefined;
  /** The server's database `name` through the pooler, with the server's user and password. */
  url: (name: string) => string;
  /** Stops the pooler (immediate shutdown: open client connections are cut) and removes its files. */
  stop: () => Promise<void>;
}

export interface PgBouncerOptions {
  /** Listen on this port (e.g. to start it again where it was); default a spare one. */
  port?: number;
  /** `transaction` (default) or `session`. */
  poolMode?: 'transaction' | 'session';
}

/** A PgBouncer in front of `serverUrl`'s server (scripts/pgbouncer.mjs). */
export function startPgBouncer(serverUrl: string, options?: PgBouncerOptions): Promise<PgBouncer>;
