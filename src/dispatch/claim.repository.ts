import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app.config.js';
import { DispatchDatabase } from '../database/dispatch-database.js';
import { Prisma } from '../generated/prisma/client.js';

/**
 * A host row's room right now, as the columns `tokens` (rate-limit tokens refilled to
 * now, NULL when unthrottled) and `slots` (free places under its cap; one probe when an
 * open breaker's cool-down is over and nothing is in flight). Read twice by the claim:
 * without locks to skip full hosts, then again under the host row locks.
 */
function hostRoom(defaultCap: number): Prisma.Sql {
  return Prisma.sql`
    CASE WHEN h.rate_per_sec IS NULL THEN NULL
         ELSE least(greatest(1, h.rate_per_sec),
                    h.tokens + h.rate_per_sec * extract(epoch FROM now() - coalesce(h.tokens_at, now())))
    END AS tokens,
    CASE WHEN h.breaker_state = 'closed' THEN coalesce(h.max_in_flight, ${defaultCap}::int) - h.in_flight
         WHEN h.open_until <= now() AND h.in_flight = 0 THEN 1
         ELSE 0
    END AS slots`;
}

/**
 * Most due rows a claim's first walk reads (oldest first). Past them it goes host
 * by host (ClaimRepository.pastBlocked), so a large backlog of hosts that cannot
 * take calls now costs each claim at most this many row reads (~0.3 µs each).
 */
export const FRONT_SCAN_ROWS = 2_000;

/** The time of the due row after the first FRONT_SCAN_ROWS (none: the front holds them all). */
const dueAfterFront = Prisma.sql`
  SELECT next_attempt_at FROM callback WHERE status = 'pending' AND next_attempt_at <= now()
  ORDER BY next_attempt_at OFFSET ${FRONT_SCAN_ROWS} LIMIT 1`;

/** A callback this worker holds a lease on, with everything needed to send it. */
export interface ClaimedCallback {
  id: string;
  batchId: string;
  apiKeyId: string;
  url: string;
  host: string;
  method: string;
  headers: Record<string, string>;
  body: string | null;
  timeoutMs: number;
  maxAttempts: number;
  retryDelaysMs: number[] | null;
  /** Attempts finished before this one; this attempt is number `attempts + 1`. */
  attempts: number;
  /** Trace context of the API request that accepted it (only while tracing was on). */
  traceparent?: string | null;
}

@Injectable()
export class ClaimRepository {
  private readonly room: Prisma.Sql;

  constructor(
    private readonly db: DispatchDatabase,
    private readonly config: AppConfig,
  ) {
    this.room = hostRoom(config.hostMaxInFlight);
  }

  /**
   * Takes up to `limit` due callbacks and leases them to `owner`, within each
   * destination's limits, which hold across all worker processes: claimFront, then
   * claimPastBlocked for what the front did not fill. (The dispatcher calls the two
   * itself, so the first rows are sending while the second statement runs.)
   */
  async claimDue(owner: string, limit: number, leaseMarginMs: number, skipHosts: string[]): Promise<ClaimedCallback[]> {
    const front = await this.claimFront(owner, limit, leaseMarginMs, skipHosts);
    if (front.length >= limit) return front; // (a limit of 0 runs the front only)
    return front.concat(await this.claimPastBlocked(owner, limit - front.length, leaseMarginMs, skipHosts));
  }

  /** The oldest due rows, passing over hosts that cannot take a call now (see frontDue). */
  claimFront(owner: string, limit: number, leaseMarginMs: number, skipHosts: string[]): Promise<ClaimedCallback[]> {
    return this.db.query<ClaimedCallback>(this.claim(this.frontDue(limit, skipHosts), owner, leaseMarginMs));
  }

  /**
   * Due rows past the front, host by host (see pastBlocked): for when the oldest
   * due rows belong to hosts that cannot take them. A claim then costs a probe or
   * two per host with due rows, never a read of another host's whole backlog. Runs only
   * when more than FRONT_SCAN_ROWS rows are due, which a single probe tells.
   */
  claimPastBlocked(owner: string, limit: number, leaseMarginMs: number, skipHosts: string[]): Promise<ClaimedCallback[]> {
    return this.db.query<ClaimedCallback>(this.claim(this.pastBlocked(limit, skipHosts), owner, leaseMarginMs));
  }

  /**
   * `due`: the oldest due pending rows of hosts not blocked, walked through
   * `callback_due_idx (next_attempt_at) WHERE status = 'pending'` and locked
   * `FOR UPDATE SKIP LOCKED` so concurrent claimers take disjoint rows; hosts in
   * `skipHosts` are full in this process and would only wait in memory. The walk
   * stops at `limit` rows. While some host is blocked, it also stops before the
   * time of the due row after the first FRONT_SCAN_ROWS (`front_end`, one probe
   * of the same index), so a blocked backlog costs at most that many rows read;
   * with no host blocked there is nothing to pass over, and no probe.
   */
  private frontDue(limit: number, skipHosts: string[]): Prisma.Sql {
    return Prisma.sql`
      front_end AS MATERIALIZED (
        SELECT CASE WHEN EXISTS (SELECT 1 FROM blocked) OR cardinality(${skipHosts}::text[]) > 0 THEN
                 (${dueAfterFront})
               END AS at
      ), due AS MATERIALIZED (
        SELECT c.id, c.host, c.url, c.next_attempt_at FROM callback c
        WHERE c.status = 'pending' AND c.next_attempt_at <= now()
          AND c.next_attempt_at < coalesce((SELECT at FROM front_end), 'infinity')
          AND c.host <> ALL(${skipHosts}::text[]) AND c.host NOT IN (SELECT host FROM blocked)
        ORDER BY c.next_attempt_at
        LIMIT ${limit}
        FOR UPDATE OF c SKIP LOCKED
      )`;
  }

  /**
   * `due` past the front: only when more than FRONT_SCAN_ROWS rows are due (so the
   * front walk stopped short of them), it lists the hosts with due rows (a loose
   * scan of `callback_pending_host_idx (host, next_attempt_at)`: one probe per
   * such host), keeps those not blocked whose oldest due rows are oldest, and takes
   * each one's oldest due rows, at most its room.
   */
  private pastBlocked(limit: number, skipHosts: string[]): Prisma.Sql {
    // A host's due rows are read as the range (host, -infinity) < (host,
    // next_attempt_at) <= (host, now()): a row comparison only the index on (host,
    // next_attempt_at) can serve. Written as host = $1, the planner may walk
    // callback_due_idx oldest first and filter by host, through other hosts'
    // backlogs: the very walk this statement is for avoiding.
    const dueOf = (host: Prisma.Sql) => Prisma.sql`
      c.status = 'pending'
      AND (c.host, c.next_attempt_at) > (${host}, '-infinity'::timestamptz)
      AND (c.host, c.next_attempt_at) <= (${host}, now())`;
    // Hosts with due rows, in name order: each step finds the next one in the same
    // index, where rows not yet due are passed over inside the index, unread.
    const nextDueHost = (after: Prisma.Sql) => Prisma.sql`
      SELECT c.host FROM callback c
      WHERE c.status = 'pending' AND c.host > ${after} AND c.next_attempt_at <= now()
      ORDER BY c.host, c.next_attempt_at LIMIT 1`;
    return Prisma.sql`
      due_hosts AS (
        (${nextDueHost(Prisma.sql`''`)})
        UNION ALL
        SELECT (${nextDueHost(Prisma.sql`p.host`)}) FROM due_hosts p WHERE p.host IS NOT NULL
      ), ready AS MATERIALIZED (
        SELECT p.host, least(${limit}::int, coalesce(l.slots, ${this.config.hostMaxInFlight}::int)) AS room, oldest.at
        FROM due_hosts p
        LEFT JOIN limits l ON l.host = p.host
        CROSS JOIN LATERAL (
          SELECT c.next_attempt_at AS at FROM callback c WHERE ${dueOf(Prisma.sql`p.host`)}
          ORDER BY c.host, c.next_attempt_at LIMIT 1
        ) oldest
        WHERE EXISTS (${dueAfterFront})
          AND p.host IS NOT NULL AND p.host <> ALL(${skipHosts}::text[]) AND p.host NOT IN (SELECT host FROM blocked)
        ORDER BY oldest.at
        LIMIT ${limit}
      ), due AS MATERIALIZED (
        SELECT d.id, d.host, d.url, d.next_attempt_at
        FROM ready r
        CROSS JOIN LATERAL (
          SELECT c.id, c.host, c.url, c.next_attempt_at FROM callback c WHERE ${dueOf(Prisma.sql`r.host`)}
          ORDER BY c.host, c.next_attempt_at
          LIMIT r.room
          FOR UPDATE OF c SKIP LOCKED
        ) d
        ORDER BY d.next_attempt_at
        LIMIT ${limit}
      )`;
  }

  /**
   * One claim statement around a `due` (the candidate rows, locked), in steps:
   * - `limits` / `blocked`: hosts that cannot take a call now by their last
   *   committed state (at their in-flight cap, paused by the breaker, out of rate
   *   tokens). Read without locks, through the partial index `host_limited_idx`
   *   (idle hosts of the history, which cannot be blocked, are not read); they only
   *   keep those hosts' rows out of `due`, so a host with thousands of waiting rows
   *   cannot fill the claim and starve the others.
   * - `due`: see frontDue and pastBlocked.
   * - `hosts`: locks those hosts' rows `FOR UPDATE` by primary key, in name order
   *   (claimers and the triggers lock hosts in the same order: no deadlock). A
   *   locked row reads the latest committed `in_flight` (kept exact by triggers on
   *   callback), so two workers never hand out the same slot; a second claimer for
   *   the same host waits for the first to commit (a millisecond), then sees its
   *   rows counted. `slots` is the room under the cap, or one probe when an open
   *   breaker's cool-down is over and nothing is in flight; `tokens` the
   *   rate-limit bucket refilled to now.
   * - `pick`: per host the oldest locked rows that fit (`row_number` per host);
   *   the rest are unlocked at commit, untouched.
   * - `moved`: leases them (lease = call timeout + margin, which bounds how long a
   *   crashed worker can hold them). Rows whose URL answered 410 Gone are failed
   *   here instead, without a call (`endpoint_gone`).
   * - `spent`: takes the rate tokens and turns an open breaker half-open for its probe.
   *
   * The triggers add the leased rows to `host.in_flight` when the statement ends.
   */
  private claim(due: Prisma.Sql, owner: string, leaseMarginMs: number): Prisma.Sql {
    const cooldownMs = this.config.hostBreakerCooldownMs;
    const room = this.room;
    return Prisma.sql`
      WITH RECURSIVE limits AS MATERIALIZED (
        SELECT h.host, h.rate_per_sec, h.breaker_state,
               ${room}
        FROM host h
        -- an idle, closed, unthrottled host always has room (caps are at least 1)
        WHERE h.in_flight > 0 OR h.breaker_state <> 'closed' OR h.rate_per_sec IS NOT NULL
      ), blocked AS MATERIALIZED (
        SELECT host FROM limits WHERE slots < 1 OR tokens < 1
      ), ${due}, hosts AS MATERIALIZED (
        SELECT h.host, h.rate_per_sec, h.breaker_state,
               ${room}
        FROM host h
        WHERE h.host IN (SELECT host FROM due)
        ORDER BY h.host
        FOR UPDATE
      ), pick AS MATERIALIZED (
        SELECT r.id, r.host, EXISTS (SELECT 1 FROM gone_endpoint g WHERE g.url = r.url) AS gone
        FROM (SELECT d.id, d.host, d.url, row_number() OVER (PARTITION BY d.host ORDER BY d.next_attempt_at) AS rn FROM due d) r
        JOIN hosts h ON h.host = r.host
        WHERE r.rn <= least(h.slots, coalesce(floor(h.tokens), h.slots))
      ), moved AS (
        UPDATE callback c
        SET status = CASE WHEN p.gone THEN 'failed' ELSE 'in_flight' END,
            lease_owner = CASE WHEN p.gone THEN NULL ELSE ${owner} END,
            lease_expires_at = CASE WHEN p.gone THEN NULL
                                    ELSE now() + (c.timeout_ms + ${leaseMarginMs}::int) * interval '1 millisecond' END,
            completed_at = CASE WHEN p.gone THEN now() ELSE c.completed_at END,
            last_error = CASE WHEN p.gone THEN 'endpoint_gone: this URL answered 410 Gone; not called again' ELSE c.last_error END
        FROM pick p
        WHERE c.id = p.id
        RETURNING c.id, c.batch_id, c.api_key_id, c.url, c.host, c.method, c.headers, c.body, c.timeout_ms,
                  c.max_attempts, c.retry_delays_ms, c.attempts, c.traceparent, p.gone
      ), spent AS (
        UPDATE host h
        SET tokens = CASE WHEN hs.tokens IS NULL THEN h.tokens ELSE hs.tokens - m.n END,
            tokens_at = CASE WHEN hs.tokens IS NULL THEN h.tokens_at ELSE now() END,
            breaker_state = CASE WHEN hs.breaker_state = 'closed' THEN 'closed' ELSE 'half_open' END,
            open_until = CASE WHEN hs.breaker_state = 'closed' THEN h.open_until
                              ELSE now() + ${cooldownMs}::int * interval '1 millisecond' END
        FROM (SELECT host, count(*) AS n FROM moved WHERE NOT gone GROUP BY host) m
        JOIN hosts hs ON hs.host = m.host
        WHERE h.host = m.host
      )
      SELECT id, batch_id AS "batchId", api_key_id AS "apiKeyId", url, host, method, headers, body,
             timeout_ms AS "timeoutMs", max_attempts AS "maxAttempts", retry_delays_ms AS "retryDelaysMs", attempts, traceparent
      FROM moved WHERE NOT gone`;
  }

  /**
   * Hands leased rows back untouched (shutdown, or rows that waited too long in
   * memory). Only rows still leased to `owner` move (so still in flight): a lease
   * that already expired and was taken by another worker stays theirs.
   */
  async releaseClaims(owner: string, ids: string[]): Promise<number> {
    if (ids.length === 0) return 0;
    return this.db.execute(Prisma.sql`
      UPDATE callback SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL
      WHERE id = ANY(${ids}::uuid[]) AND lease_owner = ${owner}`);
  }

  /**
   * Makes rows of crashed workers claimable again: in-flight rows whose lease ran
   * out go back to pending, due now. Served by `callback_lease_idx` (rows holding a
   * lease). The call that was in flight at the crash may have reached the receiver;
   * it is sent again with the same webhook-id (at-least-once).
   */
  reapExpiredLeases(): Promise<number> {
    return this.db.execute(Prisma.sql`
      UPDATE callback SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL, next_attempt_at = now()
      WHERE lease_expires_at < now()`);
  }

  /** When the next pending callback falls due, to sleep exactly until then. */
  async nextDueAt(): Promise<Date | undefined> {
    const rows = await this.db.query<{ at: Date | null }>(Prisma.sql`
      SELECT min(next_attempt_at) AS at FROM callback WHERE status = 'pending'`);
    return rows[0]?.at ?? undefined;
  }
}
