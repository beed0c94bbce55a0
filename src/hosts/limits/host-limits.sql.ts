import { BREAKER } from '../../model/states.js';
import { Prisma } from '../../generated/prisma/client.js';
import type { BreakerState } from './breaker.policy.js';

/**
 * Per-host limits in SQL. The `host` row of each destination holds its cap and rate
 * overrides, its rate-limit bucket and its circuit breaker, and `in_flight`: the
 * count of its callbacks in status in_flight, kept exact by statement triggers on
 * `callback` (migration 20261130114800_host_limits), whichever statement changes a
 * status. The claim (claim.sql.ts) reads and spends them through `hostRoom`
 * (src/queue/host-room.sql.ts, which the API's status reads share); the worker's
 * breaker reports (host-limits.service.ts) write them here.
 *
 * Lock order: host rows are locked in name order by every statement that locks
 * several (the claim, the breaker report, the triggers), so none can deadlock.
 */

/**
 * Hosts with a cap override or a breaker that is not clean: what each worker caches
 * (small), read once a second. No locks; `host_limited_idx` and a scan of the
 * overridden rows.
 */
export const notableHosts = () => Prisma.sql`
  SELECT host, max_in_flight AS "maxInFlight", breaker_state AS "breakerState",
         consecutive_failures AS "consecutiveFailures", opened_at AS "openedAt", open_until AS "openUntil"
  FROM host
  WHERE max_in_flight IS NOT NULL OR breaker_state <> ${BREAKER.closed} OR consecutive_failures > 0`;

/** Locks the hosts' rows `FOR UPDATE` in name order and reads their breakers (inside the report's transaction). */
export const lockBreakers = (hosts: string[]) => Prisma.sql`
  SELECT host, breaker_state AS state, consecutive_failures AS failures, opened_at AS "openedAt", open_until AS "openUntil"
  FROM host WHERE host = ANY(${hosts}::text[]) ORDER BY host FOR UPDATE`;

/** Writes breakers decided under lockBreakers' locks, one statement for all hosts. */
export const writeBreakers = (list: Array<[string, BreakerState]>) => Prisma.sql`
  UPDATE host h SET breaker_state = n.state, consecutive_failures = n.failures, opened_at = n.opened_at, open_until = n.open_until
  FROM unnest(${list.map(([h]) => h)}::text[], ${list.map(([, s]) => s.state)}::text[], ${list.map(([, s]) => s.failures)}::int[],
              ${list.map(([, s]) => s.openedAt)}::timestamptz[], ${list.map(([, s]) => s.openUntil)}::timestamptz[])
       AS n(host, state, failures, opened_at, open_until)
  WHERE h.host = n.host`;

/** Records URLs that answered 410 Gone to a key (its first answer of each URL stays); the claim fails that key's callbacks to them from then on. */
export const insertGoneEndpoints = (rows: Array<{ url: string; host: string; apiKeyId: string; statusCode: number }>) => Prisma.sql`
  INSERT INTO gone_endpoint (url, host, api_key_id, status_code)
  SELECT * FROM unnest(${rows.map((r) => r.url)}::text[], ${rows.map((r) => r.host)}::text[],
                       ${rows.map((r) => r.apiKeyId)}::uuid[], ${rows.map((r) => r.statusCode)}::int[])
  ON CONFLICT (api_key_id, url) DO NOTHING`;

/**
 * Per-key breakers (`host_key_breaker`, breaker.policy.ts `failureScope`): a key's own
 * breaker at a host, for the failures that depend on its calls. Rows exist only while
 * not clean; the claim reads those not closed (`keyPauses` in claim.sql.ts).
 *
 * Lock order: a report locks its rows in (host, api_key_id) order and nothing else;
 * the claim updates the rows of the probes it takes after its host rows. Neither waits
 * on the other's kind of row while holding its own, so they cannot deadlock.
 */

/** Every key breaker that is not clean (a handful): what each worker caches beside notableHosts. No locks. */
export const keyBreakers = () => Prisma.sql`
  SELECT host, api_key_id AS "apiKeyId", state, failures, opened_at AS "openedAt", open_until AS "openUntil"
  FROM host_key_breaker`;

/**
 * Inserts the missing key breakers of the pairs with failures to count, in the order
 * given (sorted by host, then key, by every reporter: two reporters of the same new
 * pairs wait for each other in one order). First statement of a report's transaction,
 * so lockKeyBreakers, a statement of its own, sees rows another reporter committed
 * meanwhile.
 */
export const insertKeyBreakers = (pairs: Array<{ host: string; apiKeyId: string }>) => Prisma.sql`
  INSERT INTO host_key_breaker (host, api_key_id)
  SELECT * FROM unnest(${pairs.map((p) => p.host)}::text[], ${pairs.map((p) => p.apiKeyId)}::uuid[])
  ON CONFLICT (host, api_key_id) DO NOTHING`;

/** Locks the key breakers of `pairs` `FOR UPDATE`, one primary-key probe each, in the order given (sorted); a pair without a row is clean. */
export const lockKeyBreakers = (pairs: Array<{ host: string; apiKeyId: string }>) => Prisma.sql`
  SELECT k.host, k.api_key_id AS "apiKeyId", k.state, k.failures, k.opened_at AS "openedAt", k.open_until AS "openUntil"
  FROM unnest(${pairs.map((p) => p.host)}::text[], ${pairs.map((p) => p.apiKeyId)}::uuid[]) AS u(host, api_key_id)
  CROSS JOIN LATERAL (
    SELECT * FROM host_key_breaker k WHERE k.host = u.host AND k.api_key_id = u.api_key_id FOR UPDATE
  ) k`;

/**
 * Writes key breakers decided under lockKeyBreakers' locks: a clean one (closed, no
 * failures) is deleted, the others updated, in one statement.
 */
export const writeKeyBreakers = (list: Array<{ host: string; apiKeyId: string; state: BreakerState }>) => Prisma.sql`
  WITH n AS (
    SELECT * FROM unnest(${list.map((k) => k.host)}::text[], ${list.map((k) => k.apiKeyId)}::uuid[], ${list.map((k) => k.state.state)}::text[],
                         ${list.map((k) => k.state.failures)}::int[], ${list.map((k) => k.state.openedAt)}::timestamptz[],
                         ${list.map((k) => k.state.openUntil)}::timestamptz[])
         AS n(host, api_key_id, state, failures, opened_at, open_until)
  ), cleared AS (
    DELETE FROM host_key_breaker k USING n
    WHERE k.host = n.host AND k.api_key_id = n.api_key_id AND n.state = ${BREAKER.closed} AND n.failures = 0
  )
  UPDATE host_key_breaker k
  SET state = n.state, failures = n.failures, opened_at = n.opened_at, open_until = n.open_until, updated_at = now()
  FROM n
  WHERE k.host = n.host AND k.api_key_id = n.api_key_id AND NOT (n.state = ${BREAKER.closed} AND n.failures = 0)`;

/**
 * Deletes key breakers nobody wrote for `idleMs` whose pause is over (the key sends
 * nothing there any more: a key with due rows would have probed it), so the rows the
 * claim reads stay few. Their key's next failures there count from zero. A scan of
 * the small table; locks the rows it deletes.
 */
export const deleteIdleKeyBreakers = (idleMs: number) => Prisma.sql`
  DELETE FROM host_key_breaker
  WHERE updated_at < now() - ${idleMs}::int * interval '1 millisecond' AND (open_until IS NULL OR open_until < now())`;
