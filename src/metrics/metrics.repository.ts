import { Injectable } from '@nestjs/common';
import { BREAKER, STATUS } from '../model/states.js';
import { ApiDatabase } from '../database/api-database.js';
import { Prisma } from '../generated/prisma/client.js';

/** Most due rows counted per scrape: past this the backlog reads as this number. */
export const BACKLOG_COUNT_CAP = 100_000;
/** Keys reported per scrape: the busiest (bounded label count). */
export const KEYS_CAP = 10;
/** Most hosts reported per scrape (busy or broken ones). */
const HOSTS_CAP = 500;
/** Failing receivers reported per scrape by name: those failing longest (bounded label count). */
export const FAILING_RECEIVERS_CAP = 10;
/** A receiver counts as failing now while its every attempt since `failing_since` failed and the last one is at most this old. */
export const FAILING_RECENT_MS = 15 * 60_000;

@Injectable()
export class MetricsRepository {
  constructor(private readonly db: ApiDatabase) {}

  /**
   * Callbacks due now and not yet claimed, counted up to BACKLOG_COUNT_CAP so a
   * scrape stays cheap however large the backlog. Read-only, no locks; served by
   * the partial index `callback_due_idx (next_attempt_at) WHERE status = 'pending'`.
   */
  async dueBacklog(): Promise<number> {
    const rows = await this.db.query<{ n: number }>(Prisma.sql`
      SELECT count(*)::int AS n FROM (
        SELECT 1 FROM callback WHERE status = ${STATUS.pending} AND next_attempt_at <= now() LIMIT ${BACKLOG_COUNT_CAP}
      ) due`);
    return rows[0]?.n ?? 0;
  }

  /**
   * Seconds since the oldest callback due and not claimed came due (0 when none is
   * due): a backlog that grows old. Rows waiting for a host's cap or breaker, or for
   * their ordering key, count; held ones do not (their due time lies 1000 years
   * ahead, receiver-hold.sql.ts). The first row of `callback_due_idx`; read-only.
   */
  async oldestDueAgeSeconds(): Promise<number> {
    const rows = await this.db.query<{ age: number }>(Prisma.sql`
      SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(next_attempt_at)), 0)::float8 AS age
      FROM callback WHERE status = ${STATUS.pending} AND next_attempt_at <= now()`);
    return Math.max(0, rows[0]?.age ?? 0);
  }

  /**
   * Receivers failing now: every attempt failed since `failing_since`, the last one
   * within FAILING_RECENT_MS, not disabled, not deleted. The FAILING_RECEIVERS_CAP
   * failing longest by name, and how many there are (up to 10,000). Walks the partial
   * index `receiver_failing_idx (failing_since) WHERE failing_since IS NOT NULL AND NOT
   * disabled`, whose rows are the failing receivers alone; read-only.
   */
  async failingReceivers(): Promise<{ count: number; longest: Array<{ keyName: string; receiver: string; seconds: number }> }> {
    const recent = Prisma.sql`r.failing_since IS NOT NULL AND NOT r.disabled AND r.deleted_at IS NULL
      AND r.last_failure_at > now() - ${FAILING_RECENT_MS}::int * interval '1 millisecond'`;
    const [longest, counted] = await Promise.all([
      this.db.query<{ keyName: string; receiver: string; seconds: number }>(Prisma.sql`
        SELECT k.name AS "keyName", r.name AS receiver, EXTRACT(EPOCH FROM now() - r.failing_since)::float8 AS seconds
        FROM receiver r JOIN api_key k ON k.id = r.api_key_id
        WHERE ${recent}
        ORDER BY r.failing_since LIMIT ${FAILING_RECEIVERS_CAP}`),
      this.db.query<{ n: number }>(Prisma.sql`SELECT count(*)::int AS n FROM (SELECT 1 FROM receiver r WHERE ${recent} LIMIT 10000) f`),
    ]);
    return { count: counted[0]?.n ?? 0, longest };
  }

  /**
   * The KEYS_CAP keys with the most due and in-flight callbacks: due rows counted up
   * to BACKLOG_COUNT_CAP in all (`callback_due_idx`), in-flight rows through
   * `callback_lease_idx` (a row holds a lease exactly while in flight). Read-only.
   */
  busiestKeys(): Promise<Array<{ id: string; name: string; due: number; inFlight: number }>> {
    return this.db.query(Prisma.sql`
      WITH due AS (
        SELECT api_key_id, count(*)::int AS n FROM (
          SELECT api_key_id FROM callback WHERE status = ${STATUS.pending} AND next_attempt_at <= now() LIMIT ${BACKLOG_COUNT_CAP}
        ) d GROUP BY api_key_id
      ), flying AS (
        SELECT api_key_id, count(*)::int AS n FROM callback WHERE lease_expires_at IS NOT NULL GROUP BY api_key_id
      )
      SELECT k.id, k.name, coalesce(due.n, 0) AS due, coalesce(flying.n, 0) AS "inFlight"
      FROM api_key k LEFT JOIN due ON due.api_key_id = k.id LEFT JOIN flying ON flying.api_key_id = k.id
      WHERE due.n > 0 OR flying.n > 0
      ORDER BY coalesce(due.n, 0) + coalesce(flying.n, 0) DESC, k.id
      LIMIT ${KEYS_CAP}`);
  }

  /**
   * Per-host limiter state shared by all workers: in-flight count and breaker
   * state of hosts with calls in flight or a breaker not closed. Read-only, no
   * locks; served by the partial index `host_limited_idx`, so its cost follows the
   * hosts in use, not every destination ever called.
   */
  hostStates(): Promise<Array<{ host: string; inFlight: number; breakerState: string }>> {
    return this.db.query(Prisma.sql`
      SELECT host, in_flight AS "inFlight", breaker_state AS "breakerState" FROM host
      WHERE in_flight > 0 OR breaker_state <> ${BREAKER.closed}
      ORDER BY in_flight DESC
      LIMIT ${HOSTS_CAP}`);
  }
}
