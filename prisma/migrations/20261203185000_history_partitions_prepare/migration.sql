-- migrate: outside a transaction
-- migrate: only when SELECT relkind = 'r' FROM pg_class WHERE oid = 'public.callback'::regclass
--
-- The slow part of partitioning a filled history (the next migration,
-- history_partitions), done first without holding up writes: each statement here is
-- its own transaction. The next migration runs in one transaction holding its tables
-- exclusively, and found these done, so it only renames and attaches: without them it
-- scanned both tables and built two unique indexes meanwhile (2 s per million
-- callbacks with their attempts, every insert waiting). Only on the schema before
-- partitioning (`callback` a plain table): a database partitioned already records this
-- as done without running it. Each step can run again after a failure (an interrupted
-- concurrent build leaves an invalid index, dropped first).
--
-- callback: done_at (a constant default, no rewrite); the check that every row is
-- unfinished, validated under a lock that lets reads and writes through; the unique
-- index (id, done_at) the partitioned primary key needs, built concurrently.
ALTER TABLE "callback" ADD COLUMN IF NOT EXISTS "done_at" TIMESTAMPTZ(3) NOT NULL DEFAULT 'infinity';
ALTER TABLE "callback" DROP CONSTRAINT IF EXISTS "callback_live_unfinished";
ALTER TABLE "callback" ADD CONSTRAINT "callback_live_unfinished" CHECK ("done_at" = 'infinity') NOT VALID;
ALTER TABLE "callback" VALIDATE CONSTRAINT "callback_live_unfinished";
DROP INDEX CONCURRENTLY IF EXISTS "callback_live_pkey_new";
CREATE UNIQUE INDEX CONCURRENTLY "callback_live_pkey_new" ON "callback" ("id", "done_at");

-- attempt: the bound of the partition the table becomes (everything started before the
-- next hour but one; now when empty), as a validated check, and the unique index
-- (id, started_at).
ALTER TABLE "attempt" DROP CONSTRAINT IF EXISTS "attempt_before_bound";
DO $$ DECLARE bound TIMESTAMPTZ := CASE WHEN EXISTS (SELECT 1 FROM "attempt") THEN date_trunc('hour', now()) + interval '2 hours' ELSE now() END; BEGIN EXECUTE format('ALTER TABLE "attempt" ADD CONSTRAINT "attempt_before_bound" CHECK ("started_at" < %L::timestamptz) NOT VALID', bound); END $$;
ALTER TABLE "attempt" VALIDATE CONSTRAINT "attempt_before_bound";
DROP INDEX CONCURRENTLY IF EXISTS "attempt_before_pkey_new";
CREATE UNIQUE INDEX CONCURRENTLY "attempt_before_pkey_new" ON "attempt" ("id", "started_at");
