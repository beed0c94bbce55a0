-- Index the hosts whose limits or state matter: calls in flight, a breaker not closed
-- or failing, a cap or a rate limit of their own.
--
-- Every destination ever called keeps its `host` row. Without an index, each claim
-- scanned all of them for the hosts that can hold it back: with 100,000 idle
-- destinations in the table, a claim of 200 rows took 26 ms instead of 9, and with
-- a million 172 ms. Each worker's once-a-second read of limit overrides and breaker
-- states, and each metrics scrape, scanned them too. Idle destinations with nothing
-- of their own are never in this index, so its size follows the hosts in use, not
-- the history. Those three reads use it: their WHERE clauses imply this predicate.
CREATE INDEX "host_limited_idx" ON "host"("host")
  WHERE "in_flight" > 0 OR "breaker_state" <> 'closed' OR "consecutive_failures" > 0
     OR "max_in_flight" IS NOT NULL OR "rate_per_sec" IS NOT NULL;
