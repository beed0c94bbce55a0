-- Latency history reads a key's attempts by time and needs only host, outcome and
-- duration from each: with those columns in the index leaf, a month of a million
-- attempts is an index-only scan (no heap visits once vacuumed). The new index has
-- the same key columns as the one it replaces (so it serves everything that one
-- did, e.g. per-host stats) and takes over its name, so writes pay for one index,
-- not two.
CREATE INDEX "attempt_history_idx" ON "attempt"("api_key_id", "started_at") INCLUDE ("host", "outcome", "duration_ms");
DROP INDEX "attempt_api_key_id_started_at_idx";
ALTER INDEX "attempt_history_idx" RENAME TO "attempt_api_key_id_started_at_idx";
