import { Injectable } from '@nestjs/common';
import { BREAKER, STATUS } from '../common/states.js';
import { ApiDatabase } from '../database/api-database.js';
import { Prisma } from '../generated/prisma/client.js';

/** Most due rows counted per scrape: past this the backlog reads as this number. */
export const BACKLOG_COUNT_CAP = 100_000;
/** Keys reported per scrape: the busiest (bounded label count). */
export const KEYS_CAP = 10;
/** Most hosts reported per scrape (busy or broken ones). */
const HOSTS_CAP = 500;

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
