-- migrate: outside a transaction
--
-- A key's open batches (not completed: something of them is still to send), with the
-- payload bytes each stored: MAX_PENDING_BYTES_PER_KEY sums them (pending.sql.ts), an
-- index range per key, read from the index alone where the visibility map allows.
-- Built concurrently, so batches keep being stored meanwhile; an interrupted build
-- leaves an invalid index, dropped first when this runs again.
DROP INDEX CONCURRENTLY IF EXISTS "batch_key_open_idx";
CREATE INDEX CONCURRENTLY "batch_key_open_idx" ON "batch" ("api_key_id") INCLUDE ("body_bytes") WHERE "completed_at" IS NULL;
