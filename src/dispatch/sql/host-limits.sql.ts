import { BREAKER } from '../../common/states.js';
import { Prisma } from '../../generated/prisma/client.js';
import type { BreakerState } from '../host-limits/breaker.policy.js';

/**
 * Per-host limits in SQL. The `host` row of each destination holds its cap and rate
 * overrides, its rate-limit bucket and its circuit breaker, and `in_flight`: the
 * count of its callbacks in status in_flight, kept exact by statement triggers on
 * `callback` (migration 20261130114800_host_limits), whichever statement changes a
 * status. The claim (claim.sql.ts) reads and spends them through `hostRoom`
 * (src/hosts/host-room.sql.ts, which the API's status reads share); the worker's
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
