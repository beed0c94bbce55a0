import { BREAKER } from '../model/states.js';
import { Prisma } from '../generated/prisma/client.js';

/**
 * A host row's room at `now`, as the columns `tokens` (rate-limit tokens refilled to
 * now, NULL when unthrottled) and `slots` (free places under its cap; one probe when
 * an open breaker's cool-down is over and nothing is in flight). Read twice by the
 * claim: without locks to skip full hosts, then again under the host row locks.
 */
export function hostRoom(defaultCap: number, now: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`
    CASE WHEN h.rate_per_sec IS NULL THEN NULL
         ELSE least(greatest(1, h.rate_per_sec),
                    h.tokens + h.rate_per_sec * extract(epoch FROM ${now} - coalesce(h.tokens_at, ${now})))
    END AS tokens,
    CASE WHEN h.breaker_state = ${BREAKER.closed} THEN coalesce(h.max_in_flight, ${defaultCap}::int) - h.in_flight
         WHEN h.open_until <= ${now} AND h.in_flight = 0 THEN 1
         ELSE 0
    END AS slots`;
}

/**
 * Hosts that may limit a claim: with calls in flight, a breaker not closed, or a
 * rate. An idle, closed, unthrottled host always has room (caps are at least 1).
 * Served by the partial index `host_limited_idx`: the hosts in use, not every
 * destination of the history.
 */
export const LIMITED_HOST = Prisma.sql`(h.in_flight > 0 OR h.breaker_state <> ${BREAKER.closed} OR h.rate_per_sec IS NOT NULL)`;
