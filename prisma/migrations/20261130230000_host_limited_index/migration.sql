-- Index the hosts that can hold a claim back: calls in flight, a breaker not closed,
-- or a rate limit.
--
-- Every destination ever called keeps its `host` row, and the claim reads the
-- limits of these hosts first. Without an index, each claim scanned every host
-- row: with 100,000 idle destinations in the table, a claim of 200 rows took
-- 26 ms instead of 9, and with a million it took 172 ms. Idle, closed,
-- unthrottled hosts are never in this index, so its size follows the hosts in
-- use, not the history. The claim and the metrics scrape use it; their WHERE
-- clauses imply this predicate.
CREATE INDEX "host_limited_idx" ON "host"("host")
  WHERE "in_flight" > 0 OR "breaker_state" <> 'closed' OR "rate_per_sec" IS NOT NULL;
