import { BREAKER, STATUS } from '../../model/states.js';
import { QUEUE } from '../../queue/queue.sql.js';
import { Prisma } from '../../generated/prisma/client.js';
import { hostRoom, LIMITED_HOST } from '../../queue/host-room.sql.js';

/**
 * The claim: due pending callbacks leased to one worker, within every destination's
 * limits across all workers. Two statements share one shape (`claim` around a `due`):
 * `claimFront` (each key its weighted share, high priority first, ordering keys one
 * at a time) and `claimPastBlocked` (host by host, oldest first, for when the front's
 * rows belong to hosts that cannot take them).
 * Locks: the chosen callback rows `FOR UPDATE SKIP LOCKED` (concurrent claimers take
 * disjoint rows), then their hosts' rows `FOR UPDATE` in name order.
 * Held rows (receiver disabled) are passed over by `NOT c.held`, a filter on the row
 * each walk reads anyway; rows of a receiver just disabled that its task (task.sql.ts)
 * has not held yet are left out in `pick`, by a probe of the receiver's row.
 */

/**
 * What the two claim statements run with, on top of the worker's settings, and for
 * them alone (ClaimRepository: a connection of their own whose session carries them,
 * or `SET LOCAL` in their own transaction behind a transaction pooler), and why each
 * (test/db/plans.test.ts checks the plans they give):
 *
 * - `enable_bitmapscan = off`, `enable_sort = off`: the queue's statistics are
 *   always stale (statuses change thousands of times a second, ANALYZE runs at most
 *   once a minute), so the planner guesses a handful of due rows, reads them all with
 *   a bitmap scan or through `callback_due_idx`, and sorts them, instead of walking
 *   `callback_key_due_idx` / `callback_pending_host_idx` in order and stopping at the
 *   walk's LIMIT. No shape of the statement alone keeps those walks: the row
 *   comparisons serve only the intended index, but a sort of the guessed handful
 *   always looks cheaper. Within the claim a sort nothing else can avoid then costs
 *   10^10, so the claim takes its order from an index wherever one gives it (locks in
 *   name order come from a sorted array, never `IN (…) ORDER BY … FOR UPDATE`: see
 *   `hosts` in claim()).
 *
 * - `enable_incremental_sort = off`: with `enable_sort` off and statistics right for
 *   once (a key with many rows due later, just analyzed), the planner walks all the
 *   key's rows by `callback_api_key_id_created_at_idx` and sorts the due handful
 *   incrementally, instead of reading the key's due range of `callback_key_due_idx`.
 *
 * A cost of 10^10 is far past `jit_above_cost`, so JIT would compile every claim
 * afresh: every statement of the worker runs with `jit = off` (dispatchSettings).
 */
export const CLAIM_PLANNER = { enable_bitmapscan: 'off', enable_sort: 'off', enable_incremental_sort: 'off' } as const;

/**
 * Most due rows a claim's first walk reads (oldest first). Past them it goes host by
 * host (claimPastBlocked), so a large backlog of hosts that cannot take calls now costs
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
  /** HOST_AFFINITY_MS: how long after this claim other workers leave the slots of the hosts it took rows of to `owner`. */
  affinityMs: number;
  /** Take free slots of hosts another worker claimed within HOST_AFFINITY_MS too (slots this worker just handed back for rows of a higher priority). */
  takeKept?: boolean;
  /**
   * Calls `owner` can start at once (its window's free places). A claim that takes more
   * leaves rows waiting in its memory, holding their hosts' slots: it marks no host.
   */
  sendRoom: number;
  now: Prisma.Sql;
}

/** The time of the due row after the first FRONT_SCAN_ROWS (none: the front holds them all). */
const dueAfterFront = (now: Prisma.Sql) => Prisma.sql`
  SELECT next_attempt_at FROM ${QUEUE} WHERE status = ${STATUS.pending} AND next_attempt_at <= ${now}
  ORDER BY next_attempt_at OFFSET ${FRONT_SCAN_ROWS} LIMIT 1`;

/**
 * Hosts with due rows a claim probes at most before it walks (`shut`): past this
 * many, it walks as it would without the probe.
 */
export const GATE_HOSTS = 64;

/**
 * The next host after `after` with a due pending row: one probe of
 * `callback_pending_host_idx (host, next_attempt_at)`, rows not yet due passed over
 * inside the index.
 */
const nextDueHost = (after: Prisma.Sql, now: Prisma.Sql) => Prisma.sql`
  SELECT c.host FROM ${QUEUE} c
  WHERE c.status = ${STATUS.pending} AND c.host > ${after} AND c.next_attempt_at <= ${now}
  ORDER BY c.host, c.next_attempt_at LIMIT 1`;

/**
 * `probe`: the hosts with due rows, by a loose scan of up to GATE_HOSTS + 1 of them
 * (a probe each). `shut`: whether every one of them is one no row may go to now
 * (blocked, or skipped by this worker). Then the claim takes nothing,
 * and neither walk runs (each carries `NOT shut` as a one-time filter): a look while
 * one host's backlog waits for its cap, which a worker makes whenever its recheck
 * timer fires and which the other workers beside the one holding the host's slots
 * make all the time, cost a walk of FRONT_SCAN_ROWS of that backlog and as many
 * again past it (2–8 ms) for nothing, and a few index probes now.
 */
const probe = (a: ClaimArgs) => Prisma.sql`
  probe AS (
    (SELECT p.host, 1 AS n FROM (${nextDueHost(Prisma.sql`''`, a.now)}) p)
    UNION ALL
    SELECT (${nextDueHost(Prisma.sql`p.host`, a.now)}), p.n + 1 FROM probe p WHERE p.host IS NOT NULL AND p.n <= ${GATE_HOSTS}
  )`;
const shut = (a: ClaimArgs) => Prisma.sql`
  shut AS MATERIALIZED (
    SELECT count(p.host) <= ${GATE_HOSTS}
           AND coalesce(bool_and(p.host IS NULL OR p.host = ANY(${a.skipHosts}::text[]) OR p.host IN (SELECT host FROM blocked)), true) AS shut
    FROM probe p
  )`;
const isShut = Prisma.sql`(SELECT shut FROM shut)`;

/**
 * Whether candidate row `r` may go now: its host is not blocked nor skipped, its
 * key's breaker at the host does not pause it (`key_pauses`), and, with an ordering key, no callback of the same key and ordering key accepted
 * before it (smaller id) is unfinished: one probe of `callback_ordering_idx`. A
 * callback waiting for its retry is pending, so it holds the ones behind it; one
 * that finished (succeeded, failed for good, cancelled) lets the next go. The check
 * reads the committed state, so it holds across workers, leases and crashes: of one
 * ordering key only the oldest unfinished callback can ever be claimed.
 */
const eligible = (r: Prisma.Sql, a: ClaimArgs) => Prisma.sql`
  ${r}.host <> ALL(${a.skipHosts}::text[]) AND ${r}.host NOT IN (SELECT host FROM blocked)
  AND (${r}.host, ${r}.api_key_id) NOT IN (SELECT host, api_key_id FROM key_pauses WHERE NOT probe)
  AND (${r}.ordering_key IS NULL OR NOT EXISTS (
    SELECT 1 FROM ${QUEUE} o
    WHERE o.api_key_id = ${r}.api_key_id AND o.ordering_key = ${r}.ordering_key
      AND o.status IN (${STATUS.pending}, ${STATUS.in_flight}) AND o.id < ${r}.id))`;

/**
 * Places a priority's n-th due row takes within its key's share: high 1, 2, 3, …;
 * normal 10, 20, …; low 100, 200, …. So while a key has high callbacks due, its
 * normal ones still get one place in ten of its share and low ones one in a
 * hundred, and with little high work due the order is strictly high, normal, low.
 */
/**
 * Claims of one key that may run at once and still each find rows: a claim reads the
 * eligible rows of a key and priority up to this many times its limit, and locks the
 * first it can (SKIP LOCKED passes over those a concurrent claim holds).
 */
const CONCURRENT_CLAIMS = 4;

const PRIORITY_STEP = Prisma.sql`(CASE x.priority WHEN 0 THEN 1 WHEN 1 THEN 10 ELSE 100 END)`;

/**
 * The front: due rows key by key, each key its weighted share of every worker's claim.
 * - `keys`: the keys with pending rows, by a loose scan of `callback_key_due_idx
 *   (api_key_id, priority, next_attempt_at) WHERE status = 'pending'`; `shares`: of
 *   those with a due row, each one's share of the claim (a fraction) by `api_key.weight`.
 * - `cand`: per key and priority its oldest due rows that may go (`eligible`), one range
 *   of that index, at most FRONT_SCAN_ROWS deep (past it, claimPastBlocked); of those
 *   the first `limit` it can lock `FOR UPDATE SKIP LOCKED` by primary key, each with
 *   its place in the key's order (PRIORITY_STEP).
 * - `due`: the `limit` rows earliest by place / share (a share a key cannot use goes to
 *   the others); the candidates not taken are unlocked at commit, untouched.
 */
export function claimFront(a: ClaimArgs): Prisma.Sql {
  // A key's due rows of one priority, as the range (key, p, -infinity) < (api_key_id,
  // priority, next_attempt_at) <= (key, p, now): a row comparison only
  // callback_key_due_idx can serve. Written as api_key_id = $1 AND priority = $2, the
  // planner, with the queue's statistics always stale, walked callback_due_idx oldest
  // first through every other key's rows, filtering by key.
  const dueOfKey = (key: Prisma.Sql, priority: Prisma.Sql) => Prisma.sql`
    c.status = ${STATUS.pending}
    AND (c.api_key_id, c.priority, c.next_attempt_at) > (${key}, ${priority}, '-infinity'::timestamptz)
    AND (c.api_key_id, c.priority, c.next_attempt_at) <= (${key}, ${priority}, ${a.now})`;
  const inKeyOrder = Prisma.sql`ORDER BY c.api_key_id, c.priority, c.next_attempt_at`;
  return claim(
    a,
    Prisma.sql`
    keys AS (
      (SELECT c.api_key_id AS id FROM ${QUEUE} c WHERE c.status = ${STATUS.pending} ORDER BY c.api_key_id LIMIT 1)
      UNION ALL
      SELECT (SELECT c.api_key_id FROM ${QUEUE} c WHERE c.status = ${STATUS.pending} AND c.api_key_id > k.id
              ORDER BY c.api_key_id LIMIT 1)
      FROM keys k WHERE k.id IS NOT NULL
    ), shares AS MATERIALIZED (
      SELECT k.id, a.weight::float8 / sum(a.weight) OVER () AS share
      FROM keys k JOIN api_key a ON a.id = k.id
      WHERE NOT ${isShut} AND k.id IS NOT NULL
        AND EXISTS (SELECT 1 FROM (VALUES (0), (1), (2)) p(p), LATERAL (
              SELECT 1 FROM ${QUEUE} c WHERE ${dueOfKey(Prisma.sql`k.id`, Prisma.sql`p.p::smallint`)} ${inKeyOrder} LIMIT 1) d)
    ), cand AS MATERIALIZED (
      SELECT x.id, x.api_key_id, x.host, x.url, x.receiver_id, x.status, s.share,
             row_number() OVER (PARTITION BY x.api_key_id, x.priority ORDER BY x.next_attempt_at) * ${PRIORITY_STEP} AS place,
             x.priority, x.next_attempt_at
      FROM shares s
      CROSS JOIN (VALUES (0), (1), (2)) p(p)
      CROSS JOIN LATERAL (
        -- Eligible rows in the index's order; each locked by primary key as it comes,
        -- so SKIP LOCKED passes over those a concurrent claim holds and takes the next.
        SELECT l.* FROM (
          SELECT r.id FROM (
            SELECT c.id, c.api_key_id, c.host, c.ordering_key FROM ${QUEUE} c
            WHERE ${dueOfKey(Prisma.sql`s.id`, Prisma.sql`p.p::smallint`)} AND NOT c.held
            ${inKeyOrder} LIMIT ${FRONT_SCAN_ROWS}
          ) r
          WHERE ${eligible(Prisma.sql`r`, a)}
          LIMIT least(${FRONT_SCAN_ROWS}, ${a.limit}::int * ${CONCURRENT_CLAIMS})
        ) e
        CROSS JOIN LATERAL (
          -- By primary key only: naming the status here (or anywhere the planner can
          -- push it down to) let it, with the queue's statistics always stale, read
          -- callback_due_idx for each row (20,000 entries a lookup). The status of the
          -- row as locked is checked in the ranked step.
          SELECT c.id, c.api_key_id, c.host, c.url, c.receiver_id, c.priority, c.next_attempt_at, c.status FROM ${QUEUE} c
          WHERE c.id = e.id
          FOR UPDATE OF c SKIP LOCKED
        ) l
        LIMIT ${a.limit}
      ) x
    ), ranked AS MATERIALIZED (
      SELECT id, api_key_id, host, url, receiver_id, row_number() OVER (PARTITION BY api_key_id ORDER BY place, priority, next_attempt_at) / share AS ord
      FROM cand WHERE status = ${STATUS.pending} -- claimed and committed by another worker meanwhile: not ours
    ), due AS MATERIALIZED (
      SELECT id, api_key_id, host, url, receiver_id, ord FROM ranked ORDER BY ord LIMIT ${a.limit}
    )`,
  );
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
  return claim(
    a,
    Prisma.sql`
    due_hosts AS (
      (${nextDueHost(Prisma.sql`''`, a.now)})
      UNION ALL
      SELECT (${nextDueHost(Prisma.sql`p.host`, a.now)}) FROM due_hosts p WHERE p.host IS NOT NULL
    ), ready AS MATERIALIZED (
      SELECT p.host, least(${a.limit}::int, coalesce(l.slots, ${a.defaultCap}::int)) AS room, oldest.at
      FROM due_hosts p
      LEFT JOIN limits l ON l.host = p.host
      CROSS JOIN LATERAL (
        SELECT c.next_attempt_at AS at FROM ${QUEUE} c WHERE ${dueOf(Prisma.sql`p.host`)}
        ORDER BY c.host, c.next_attempt_at LIMIT 1
      ) oldest
      WHERE NOT ${isShut} AND EXISTS (${dueAfterFront(a.now)})
        AND p.host IS NOT NULL AND p.host <> ALL(${a.skipHosts}::text[]) AND p.host NOT IN (SELECT host FROM blocked)
      ORDER BY oldest.at
      LIMIT ${a.limit}
    ), due AS MATERIALIZED (
      SELECT d.id, d.api_key_id, d.host, d.url, d.receiver_id, extract(epoch FROM d.next_attempt_at) AS ord
      FROM ready r
      CROSS JOIN LATERAL (
        SELECT c.id, c.api_key_id, c.host, c.url, c.receiver_id, c.next_attempt_at FROM ${QUEUE} c WHERE ${dueOf(Prisma.sql`r.host`)}
          AND ${eligible(Prisma.sql`c`, a)}
        ORDER BY c.host, c.next_attempt_at
        LIMIT r.room
        FOR UPDATE OF c SKIP LOCKED
      ) d
      ORDER BY d.next_attempt_at
      LIMIT ${a.limit}
    )`,
  );
}

/**
 * One claim statement around a `due` (the candidate rows, locked), in steps:
 * - `limits` / `blocked`: hosts that cannot take a call now by their last committed
 *   state (in-flight cap, breaker, rate tokens; partial index `host_limited_idx`), and
 *   (`kept`) hosts with due rows (`probe`) another worker marked within HOST_AFFINITY_MS
 *   (see `spent`). Read without locks, they only keep those hosts' rows out of `due`,
 *   so one host's backlog cannot fill the claim and starve the others.
 * - `key_pauses`: the keys' own breakers not closed at a host (`host_key_breaker`, a
 *   handful of rows: breaker.policy.ts `failureScope`); a paused key's rows there are
 *   not `eligible`, other keys' rows go as usual. `shut` (see `probe`) ignores pauses.
 * - `hosts`: locks the hosts of `due` (claimFront, claimPastBlocked) `FOR UPDATE` by
 *   primary key in name order, and reads their latest committed `in_flight` (kept exact
 *   by triggers on callback): two workers never hand out the same slot (see hostRoom).
 * - `pick`: per host the locked rows that fit, first by `ord`, but none of a disabled
 *   receiver, and of a key whose pause there is over only its first row (`probes`);
 *   the rest are unlocked at commit, untouched.
 * - `moved`: leases them. `privateNetworks`: the key is `granted` the ranges
 *   ALLOW_PRIVATE_NETWORKS opens and the destination is not one a portal session chose
 *   for the receiver (`portal_hosts`); the transport checks each address it connects to
 *   against it (transport/http.transport.ts). Rows whose URL answered 410 Gone to their
 *   key (`gone`) are not leased: they come back named for failGoneEndpoints (gone.sql.ts).
 * - `spent`: takes the rate tokens, turns an open breaker half-open for its probe, and
 *   marks a host claimed by `owner` for HOST_AFFINITY_MS when the claim took its every
 *   free slot and the worker can send all it took at once (`sendRoom`: rows waiting in
 *   its memory would hold slots another worker could use). The others then count the
 *   host blocked while its breaker is closed, so the slots the owner's write-backs free
 *   come back to it instead of passing among workers a few at a time; a host left room
 *   stays free to all. A preference, not a lock: the cap is counted under the host lock
 *   either way (ARCHITECTURE.md, "Per-host limits across workers").
 * - `probed`: turns the key breakers of `probes` half-open for the cool-down or the
 *   probe's lease, whichever is longer (the window keeps a second probe from starting).
 *   Its row locks come after the host rows'; a report locks only key breakers.
 * - Deliveries of an event hold no body of their own (`body_event_id`, delivery.sql.ts):
 *   each such event's body comes back once, as a row with a null id.
 * The triggers add the leased rows to `host.in_flight` when the statement ends.
 */
function claim(a: ClaimArgs, due: Prisma.Sql): Prisma.Sql {
  const room = hostRoom(a.defaultCap, a.now);
  return Prisma.sql`
    WITH RECURSIVE limits AS MATERIALIZED (
      SELECT h.host, h.rate_per_sec, h.breaker_state, ${room}
      FROM host h WHERE ${LIMITED_HOST}
    ), key_pauses AS MATERIALIZED (
      SELECT k.host, k.api_key_id, k.open_until <= ${a.now} AS probe FROM host_key_breaker k WHERE k.state <> ${BREAKER.closed}
    ), ${probe(a)}, kept AS MATERIALIZED (
      SELECT h.host FROM probe p JOIN host h ON h.host = p.host
      WHERE ${!a.takeKept}::boolean AND h.claimed_by <> ${a.owner} AND h.claimed_until > ${a.now} AND h.breaker_state = ${BREAKER.closed}
    ), blocked AS MATERIALIZED (
      SELECT host FROM limits WHERE slots < 1 OR tokens < 1
      UNION ALL
      SELECT host FROM kept
    ), ${shut(a)}, ${due}, hosts AS MATERIALIZED (
      -- One host row after the other in name order, each locked by primary key. (As
      -- host IN (...) ORDER BY host FOR UPDATE, a plan without a sort, which the
      -- claim's settings prefer (CLAIM_PLANNER), walked all of host_pkey: 14 s with a million hosts.)
      SELECT h.host, h.rate_per_sec, h.breaker_state, ${room}
      FROM unnest(ARRAY(SELECT DISTINCT host FROM due ORDER BY host)) AS d(host)
      CROSS JOIN LATERAL (SELECT * FROM host h WHERE h.host = d.host FOR UPDATE) h
    ), probes AS MATERIALIZED (
      SELECT DISTINCT ON (d.host, d.api_key_id) d.id
      FROM due d JOIN key_pauses k ON k.host = d.host AND k.api_key_id = d.api_key_id AND k.probe
      ORDER BY d.host, d.api_key_id, d.ord
    ), pick AS MATERIALIZED (
      SELECT r.id, r.host, r.public_only, EXISTS (SELECT 1 FROM gone_endpoint g WHERE g.api_key_id = r.api_key_id AND g.url = r.url) AS gone
      FROM (
        SELECT d.id, d.api_key_id, d.host, d.url, coalesce(rv.public_only, false) AS public_only,
               row_number() OVER (PARTITION BY d.host ORDER BY d.ord) AS rn
        FROM due d
        -- its receiver, a primary-key probe per row of a receiver: one disabled or deleted whose task
        -- has not yet held this row is left out; a destination a portal session chose goes public only
        LEFT JOIN LATERAL (
          SELECT rv.disabled, d.host = ANY(rv.portal_hosts) AS public_only FROM receiver rv WHERE rv.id = d.receiver_id
        ) rv ON true
        WHERE NOT coalesce(rv.disabled, false)
          -- of a key probing the host, its probe alone
          AND ((d.host, d.api_key_id) NOT IN (SELECT host, api_key_id FROM key_pauses) OR d.id IN (SELECT id FROM probes))
      ) r
      JOIN hosts h ON h.host = r.host
      WHERE r.rn <= least(h.slots, coalesce(floor(h.tokens), h.slots))
    ), moved AS (
      UPDATE callback c
      SET status = ${STATUS.in_flight}, lease_owner = ${a.owner},
          lease_expires_at = ${a.now} + (c.timeout_ms + ${a.leaseMarginMs}::int) * interval '1 millisecond'
      FROM pick p
      WHERE c.id = p.id AND c.done_at = 'infinity' AND NOT p.gone
      RETURNING c.id, c.batch_id, c.api_key_id, c.url, c.host, c.method, c.headers, c.body, c.timeout_ms,
                c.max_attempts, c.retry_delays_ms, c.attempts, c.priority, c.traceparent, c.receiver_id, p.public_only, c.body_event_id
    ), granted AS MATERIALIZED (
      SELECT k.id FROM api_key k WHERE k.allow_private_networks AND k.id IN (SELECT api_key_id FROM moved)
    ), spent AS (
      UPDATE host h
      SET tokens = CASE WHEN hs.tokens IS NULL THEN h.tokens ELSE hs.tokens - m.n END,
          tokens_at = CASE WHEN hs.tokens IS NULL THEN h.tokens_at ELSE ${a.now} END,
          breaker_state = CASE WHEN hs.breaker_state = ${BREAKER.closed} THEN ${BREAKER.closed} ELSE ${BREAKER.half_open} END,
          open_until = CASE WHEN hs.breaker_state = ${BREAKER.closed} THEN h.open_until
                            ELSE ${a.now} + ${a.cooldownMs}::int * interval '1 millisecond' END,
          -- the mark only when this claim took every free slot and sends all it took at once: see the comment above
          claimed_by = CASE WHEN m.n >= hs.slots AND m.all_sent THEN ${a.owner} ELSE h.claimed_by END,
          claimed_until = CASE WHEN m.n >= hs.slots AND m.all_sent THEN ${a.now} + ${a.affinityMs}::int * interval '1 millisecond' ELSE h.claimed_until END
      FROM (SELECT host, count(*) AS n, sum(count(*)) OVER () <= ${a.sendRoom}::int AS all_sent FROM moved GROUP BY host) m
      JOIN hosts hs ON hs.host = m.host
      WHERE h.host = m.host
    ), probe_rows AS MATERIALIZED (
      -- the probes leased (none unless a key's pause is over): the update below then touches nothing
      SELECT m.host, m.api_key_id, m.timeout_ms FROM moved m WHERE m.id IN (SELECT id FROM probes)
    ), probed AS (
      UPDATE host_key_breaker k
      SET state = ${BREAKER.half_open}, updated_at = ${a.now},
          open_until = ${a.now} + greatest(${a.cooldownMs}::int, m.timeout_ms + ${a.leaseMarginMs}::int) * interval '1 millisecond'
      FROM probe_rows m
      WHERE k.host = m.host AND k.api_key_id = m.api_key_id
    )
    SELECT id, batch_id AS "batchId", api_key_id AS "apiKeyId", url, host, method, headers, body,
           timeout_ms AS "timeoutMs", max_attempts AS "maxAttempts", retry_delays_ms AS "retryDelaysMs", attempts, priority, traceparent,
           receiver_id AS "receiverId", NOT public_only AND api_key_id IN (SELECT id FROM granted) AS "privateNetworks",
           body_event_id AS "bodyEventId", false AS gone
    FROM moved
    UNION ALL
    -- rows to a gone URL, untouched: failGoneEndpoints fails them (the rest of the columns null)
    SELECT id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, true FROM pick WHERE gone
    UNION ALL
    -- the body of each event whose deliveries were claimed, once: a primary-key probe of event per event (id null)
    SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, e.body, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, e.id, false
    FROM (SELECT DISTINCT body_event_id AS id FROM moved WHERE body_event_id IS NOT NULL) d
    CROSS JOIN LATERAL (SELECT e.id, e.body FROM event e WHERE e.id = d.id) e`;
}

/** Most due rows of one key and priority `dueAhead` reads. */
export const DUE_AHEAD_ROWS = 500;

/**
 * Due pending rows of `keys` with a priority above `below` (a smaller number) whose
 * host is one of `hosts`: the rows that should pass claimed rows of a lower priority
 * that a worker holds in memory for those hosts (ProducerService.yieldToHigher). Per
 * key and priority, a range of `callback_key_due_idx`, its first DUE_AHEAD_ROWS rows
 * read: a probe or two when nothing of a higher priority is due.
 */
export const dueAhead = (keys: string[], hosts: string[], below: number, now: Prisma.Sql) => Prisma.sql`
  SELECT d.host, d.priority FROM unnest(${keys}::uuid[]) AS k(id)
  CROSS JOIN generate_series(0, ${below}::int - 1) AS p(p)
  CROSS JOIN LATERAL (
    SELECT r.host, r.priority FROM (
      SELECT c.host, c.priority FROM ${QUEUE} c
      WHERE c.status = ${STATUS.pending} AND NOT c.held
        AND (c.api_key_id, c.priority, c.next_attempt_at) > (k.id, p.p::smallint, '-infinity'::timestamptz)
        AND (c.api_key_id, c.priority, c.next_attempt_at) <= (k.id, p.p::smallint, ${now})
      ORDER BY c.api_key_id, c.priority, c.next_attempt_at LIMIT ${DUE_AHEAD_ROWS}
    ) r
    WHERE r.host = ANY(${hosts}::text[])
  ) d`;
