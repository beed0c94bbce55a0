import { BREAKER, STATUS } from '../../common/states.js';
import { Prisma } from '../../generated/prisma/client.js';
import { hostRoom, LIMITED_HOST } from './host-limits.sql.js';

/**
 * The claim: due pending callbacks leased to one worker, within every destination's
 * limits across all workers. Two statements share one shape (`claim` around a `due`):
 * `claimFront` (the oldest due rows) and `claimPastBlocked` (host by host, for when
 * the oldest due rows belong to hosts that cannot take them).
 *
 * Locks: the chosen callback rows `FOR UPDATE SKIP LOCKED` (concurrent claimers take
 * disjoint rows), then their hosts' rows `FOR UPDATE` in name order.
 *
 * Held rows (`held`: their receiver is disabled) are passed over by both walks with
 * `NOT c.held`, a filter on the row the walk reads anyway: the index walks stay as
 * they are, and no receiver row is read per callback.
 */

/**
 * Most due rows a claim's first walk reads (oldest first). Past them it goes host by
 * host (pastBlockedDue), so a large backlog of hosts that cannot take calls now costs
 * each claim at most this many row reads (~0.3 µs each; `npm run bench:backlog`).
 */
export const FRONT_SCAN_ROWS = 2_000;

export interface ClaimArgs {
  owner: string;
  limit: number;
  /** Lease = the callback's timeout + this margin: how long a crashed worker can hold a row. */
  leaseMarginMs: number;
  /** Hosts this worker cannot use now (full in its memory, or its breaker opening). */
  skipHosts: string[];
  /** HOST_MAX_IN_FLIGHT, for hosts without an override. */
  defaultCap: number;
  /** HOST_BREAKER_COOLDOWN_MS: the window a half-open probe gets. */
  cooldownMs: number;
  now: Prisma.Sql;
}

/** The time of the due row after the first FRONT_SCAN_ROWS (none: the front holds them all). */
const dueAfterFront = (now: Prisma.Sql) => Prisma.sql`
  SELECT next_attempt_at FROM callback WHERE status = ${STATUS.pending} AND next_attempt_at <= ${now}
  ORDER BY next_attempt_at OFFSET ${FRONT_SCAN_ROWS} LIMIT 1`;

/**
 * The oldest due rows, passing over hosts that cannot take a call now.
 *
 * `due`: the oldest due pending rows of hosts not blocked, walked through
 * `callback_due_idx (next_attempt_at) WHERE status = 'pending'` and locked
 * `FOR UPDATE SKIP LOCKED`; hosts in `skipHosts` would only wait in memory. The walk
 * stops at `limit` rows. While some host is blocked, it also stops before the time
 * of the due row after the first FRONT_SCAN_ROWS (`front_end`, one probe of the same
 * index), so a blocked backlog costs at most that many rows read; with no host
 * blocked there is nothing to pass over, and no probe.
 */
export function claimFront(a: ClaimArgs): Prisma.Sql {
  return claim(a, Prisma.sql`
    front_end AS MATERIALIZED (
      SELECT CASE WHEN EXISTS (SELECT 1 FROM blocked) OR cardinality(${a.skipHosts}::text[]) > 0 THEN
               (${dueAfterFront(a.now)})
             END AS at
    ), due AS MATERIALIZED (
      SELECT c.id, c.host, c.url, c.next_attempt_at FROM callback c
      WHERE c.status = ${STATUS.pending} AND c.next_attempt_at <= ${a.now}
        AND c.next_attempt_at < coalesce((SELECT at FROM front_end), 'infinity')
        AND c.host <> ALL(${a.skipHosts}::text[]) AND c.host NOT IN (SELECT host FROM blocked)
        AND NOT c.held
      ORDER BY c.next_attempt_at
      LIMIT ${a.limit}
      FOR UPDATE OF c SKIP LOCKED
    )`);
}

/**
 * Due rows past the front, host by host: only when more than FRONT_SCAN_ROWS rows
 * are due (so the front walk stopped short of them), it lists the hosts with due
 * rows (a loose scan of `callback_pending_host_idx (host, next_attempt_at)`: one
 * probe per such host, rows not yet due passed over inside the index), keeps those
 * not blocked whose oldest due rows are oldest, and takes each one's oldest due
 * rows, at most its room. A claim then costs a probe or two per host with due rows,
 * never a read of another host's whole backlog.
 */
export function claimPastBlocked(a: ClaimArgs): Prisma.Sql {
  // A host's due rows are read as the range (host, -infinity) < (host,
  // next_attempt_at) <= (host, now): a row comparison only the index on (host,
  // next_attempt_at) can serve. Written as host = $1, the planner may walk
  // callback_due_idx oldest first and filter by host, through other hosts'
  // backlogs: the very walk this statement is for avoiding.
  const dueOf = (host: Prisma.Sql) => Prisma.sql`
    c.status = ${STATUS.pending} AND NOT c.held
    AND (c.host, c.next_attempt_at) > (${host}, '-infinity'::timestamptz)
    AND (c.host, c.next_attempt_at) <= (${host}, ${a.now})`;
  const nextDueHost = (after: Prisma.Sql) => Prisma.sql`
    SELECT c.host FROM callback c
    WHERE c.status = ${STATUS.pending} AND c.host > ${after} AND c.next_attempt_at <= ${a.now}
    ORDER BY c.host, c.next_attempt_at LIMIT 1`;
  return claim(a, Prisma.sql`
    due_hosts AS (
      (${nextDueHost(Prisma.sql`''`)})
      UNION ALL
      SELECT (${nextDueHost(Prisma.sql`p.host`)}) FROM due_hosts p WHERE p.host IS NOT NULL
    ), ready AS MATERIALIZED (
      SELECT p.host, least(${a.limit}::int, coalesce(l.slots, ${a.defaultCap}::int)) AS room, oldest.at
      FROM due_hosts p
      LEFT JOIN limits l ON l.host = p.host
      CROSS JOIN LATERAL (
        SELECT c.next_attempt_at AS at FROM callback c WHERE ${dueOf(Prisma.sql`p.host`)}
        ORDER BY c.host, c.next_attempt_at LIMIT 1
      ) oldest
      WHERE EXISTS (${dueAfterFront(a.now)})
        AND p.host IS NOT NULL AND p.host <> ALL(${a.skipHosts}::text[]) AND p.host NOT IN (SELECT host FROM blocked)
      ORDER BY oldest.at
      LIMIT ${a.limit}
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
      LIMIT ${a.limit}
    )`);
}

/**
 * One claim statement around a `due` (the candidate rows, locked), in steps:
 * - `limits` / `blocked`: hosts that cannot take a call now by their last committed
 *   state (at their in-flight cap, paused by the breaker, out of rate tokens). Read
 *   without locks, through the partial index `host_limited_idx`; they only keep those
 *   hosts' rows out of `due`, so a host with thousands of waiting rows cannot fill
 *   the claim and starve the others.
 * - `due`: see claimFront and claimPastBlocked.
 * - `hosts`: locks those hosts' rows `FOR UPDATE` by primary key, in name order. A
 *   locked row reads the latest committed `in_flight` (kept exact by triggers on
 *   callback), so two workers never hand out the same slot; a second claimer for the
 *   same host waits for the first to commit (a millisecond), then sees its rows
 *   counted. `slots` and `tokens`: see hostRoom.
 * - `pick`: per host the oldest locked rows that fit (`row_number` per host); the
 *   rest are unlocked at commit, untouched.
 * - `moved`: leases them. Rows whose URL answered 410 Gone are failed here instead,
 *   without a call (`endpoint_gone`).
 * - `spent`: takes the rate tokens and turns an open breaker half-open for its probe.
 * The triggers add the leased rows to `host.in_flight` when the statement ends.
 */
function claim(a: ClaimArgs, due: Prisma.Sql): Prisma.Sql {
  const room = hostRoom(a.defaultCap, a.now);
  return Prisma.sql`
    WITH RECURSIVE limits AS MATERIALIZED (
      SELECT h.host, h.rate_per_sec, h.breaker_state, ${room}
      FROM host h WHERE ${LIMITED_HOST}
    ), blocked AS MATERIALIZED (
      SELECT host FROM limits WHERE slots < 1 OR tokens < 1
    ), ${due}, hosts AS MATERIALIZED (
      SELECT h.host, h.rate_per_sec, h.breaker_state, ${room}
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
      SET status = CASE WHEN p.gone THEN ${STATUS.failed} ELSE ${STATUS.in_flight} END,
          lease_owner = CASE WHEN p.gone THEN NULL ELSE ${a.owner} END,
          lease_expires_at = CASE WHEN p.gone THEN NULL
                                  ELSE ${a.now} + (c.timeout_ms + ${a.leaseMarginMs}::int) * interval '1 millisecond' END,
          completed_at = CASE WHEN p.gone THEN ${a.now} ELSE c.completed_at END,
          last_error = CASE WHEN p.gone THEN 'endpoint_gone: this URL answered 410 Gone; not called again' ELSE c.last_error END
      FROM pick p
      WHERE c.id = p.id
      RETURNING c.id, c.batch_id, c.api_key_id, c.url, c.host, c.method, c.headers, c.body, c.timeout_ms,
                c.max_attempts, c.retry_delays_ms, c.attempts, c.receiver_id, p.gone
    ), spent AS (
      UPDATE host h
      SET tokens = CASE WHEN hs.tokens IS NULL THEN h.tokens ELSE hs.tokens - m.n END,
          tokens_at = CASE WHEN hs.tokens IS NULL THEN h.tokens_at ELSE ${a.now} END,
          breaker_state = CASE WHEN hs.breaker_state = ${BREAKER.closed} THEN ${BREAKER.closed} ELSE ${BREAKER.half_open} END,
          open_until = CASE WHEN hs.breaker_state = ${BREAKER.closed} THEN h.open_until
                            ELSE ${a.now} + ${a.cooldownMs}::int * interval '1 millisecond' END
      FROM (SELECT host, count(*) AS n FROM moved WHERE NOT gone GROUP BY host) m
      JOIN hosts hs ON hs.host = m.host
      WHERE h.host = m.host
    )
    SELECT id, batch_id AS "batchId", api_key_id AS "apiKeyId", url, host, method, headers, body,
           timeout_ms AS "timeoutMs", max_attempts AS "maxAttempts", retry_delays_ms AS "retryDelaysMs", attempts,
           receiver_id AS "receiverId"
    FROM moved WHERE NOT gone`;
}
