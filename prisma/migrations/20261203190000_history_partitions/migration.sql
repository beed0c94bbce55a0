-- History partitioned by when a row finished (ARCHITECTURE.md, "History layout").
--
-- callback: PARTITION BY RANGE (done_at). Unfinished rows have done_at = 'infinity' and
-- live in callback_live, the partition FOR VALUES FROM ('infinity') TO (MAXVALUE): the
-- queue. A statement that finishes a row sets done_at with completed_at and Postgres
-- moves the row into the time partition of that instant; a retry sets 'infinity' again.
-- Time partitions are made ahead and dropped whole by the service (src/retention).
--
-- The table as it is becomes callback_live, without a copy: its rows all have
-- done_at = 'infinity' (a default, no rewrite), so the check validated by the migration
-- before (history_partitions_prepare, outside a transaction) lets it be attached without
-- a scan under an exclusive lock. Rows it holds that finished before this migration
-- stay there and the row-by-row purge removes them as before. (This text replaced one
-- that did the preparation's work here, in this transaction: earlier-checksums.)
ALTER TABLE "callback" ADD COLUMN IF NOT EXISTS "done_at" TIMESTAMPTZ(3) NOT NULL DEFAULT 'infinity';
ALTER TABLE "callback" RENAME TO "callback_live";
CREATE TABLE "callback" (LIKE "callback_live" INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE ("done_at");
ALTER TABLE "callback" DROP CONSTRAINT IF EXISTS "callback_live_unfinished"; -- the queue's check, copied by LIKE

-- A partitioned table's unique keys include its partition key: (id, done_at), built
-- concurrently by the preparation. Ids are UUIDv7s the service makes.
CREATE UNIQUE INDEX IF NOT EXISTS "callback_live_pkey_new" ON "callback_live" ("id", "done_at");
ALTER TABLE "callback_live" DROP CONSTRAINT "callback_pkey";
ALTER INDEX "callback_live_pkey_new" RENAME TO "callback_live_pkey";
ALTER TABLE "callback_live" ADD CONSTRAINT "callback_live_pkey" PRIMARY KEY USING INDEX "callback_live_pkey";

-- The queue's indexes keep their definitions under names of their own; the parent's
-- take the old names, and each attaches the queue's equal index instead of building one.
ALTER INDEX "callback_api_key_id_created_at_idx" RENAME TO "callback_live_api_key_id_created_at_idx";
ALTER INDEX "callback_batch_id_status_idx" RENAME TO "callback_live_batch_id_status_idx";
ALTER INDEX "callback_due_idx" RENAME TO "callback_live_due_idx";
ALTER INDEX "callback_finished_idx" RENAME TO "callback_live_finished_idx";
ALTER INDEX "callback_key_due_idx" RENAME TO "callback_live_key_due_idx";
ALTER INDEX "callback_lease_idx" RENAME TO "callback_live_lease_idx";
ALTER INDEX "callback_ordering_idx" RENAME TO "callback_live_ordering_idx";
ALTER INDEX "callback_pending_host_idx" RENAME TO "callback_live_pending_host_idx";
ALTER INDEX "callback_receiver_idx" RENAME TO "callback_live_receiver_idx";
ALTER INDEX "callback_receiver_open_idx" RENAME TO "callback_live_receiver_open_idx";
ALTER INDEX "callback_recovery_idx" RENAME TO "callback_live_recovery_idx";
ALTER INDEX "callback_unsuccessful_idx" RENAME TO "callback_live_unsuccessful_idx";

-- Foreign keys on the parent first: attaching then adopts the queue's equal, validated
-- ones as they are, instead of creating them anew and checking every row.
ALTER TABLE "callback" ADD CONSTRAINT "callback_batch_id_fkey" FOREIGN KEY ("batch_id") REFERENCES "batch"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "callback" ADD CONSTRAINT "callback_receiver_id_fkey" FOREIGN KEY ("receiver_id") REFERENCES "receiver"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "callback" ATTACH PARTITION "callback_live" FOR VALUES FROM ('infinity') TO (MAXVALUE);
ALTER TABLE "callback_live" DROP CONSTRAINT "callback_live_unfinished";

ALTER TABLE "callback" ADD CONSTRAINT "callback_pkey" PRIMARY KEY ("id", "done_at");
CREATE INDEX "callback_api_key_id_created_at_idx" ON "callback" ("api_key_id", "created_at");
CREATE INDEX "callback_batch_id_status_idx" ON "callback" ("batch_id", "status");
CREATE INDEX "callback_due_idx" ON "callback" ("next_attempt_at") WHERE "status" = 'pending';
CREATE INDEX "callback_finished_idx" ON "callback" ("completed_at") WHERE "status" IN ('succeeded', 'failed', 'cancelled');
CREATE INDEX "callback_key_due_idx" ON "callback" ("api_key_id", "priority", "next_attempt_at") WHERE "status" = 'pending';
CREATE INDEX "callback_lease_idx" ON "callback" ("lease_expires_at") WHERE "lease_expires_at" IS NOT NULL;
CREATE INDEX "callback_ordering_idx" ON "callback" ("api_key_id", "ordering_key", "id") WHERE "ordering_key" IS NOT NULL AND "status" IN ('pending', 'in_flight');
CREATE INDEX "callback_pending_host_idx" ON "callback" ("host", "next_attempt_at") WHERE "status" = 'pending';
CREATE INDEX "callback_receiver_idx" ON "callback" ("receiver_id", "id") WHERE "receiver_id" IS NOT NULL;
CREATE INDEX "callback_receiver_open_idx" ON "callback" ("receiver_id", "status", "held") WHERE "receiver_id" IS NOT NULL AND "status" IN ('pending', 'in_flight');
CREATE INDEX "callback_recovery_idx" ON "callback" ("recovery_id", "status") WHERE "recovery_id" IS NOT NULL;
CREATE INDEX "callback_unsuccessful_idx" ON "callback" ("api_key_id", "status", "id") WHERE "status" IN ('failed', 'cancelled');

-- The statement triggers (host accounting, attempts of deleted rows) fire for statements
-- on the parent, where every statement goes; a moved row is an update in their
-- transition tables.
DROP TRIGGER "callback_attempts_delete" ON "callback_live";
DROP TRIGGER "callback_host_in_flight_delete" ON "callback_live";
DROP TRIGGER "callback_host_in_flight_update" ON "callback_live";
DROP TRIGGER "callback_host_rows" ON "callback_live";
CREATE TRIGGER "callback_attempts_delete" AFTER DELETE ON "callback" REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION attempts_of_deleted_callbacks();
CREATE TRIGGER "callback_host_in_flight_delete" AFTER DELETE ON "callback" REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION host_in_flight_after_delete();
CREATE TRIGGER "callback_host_in_flight_update" AFTER UPDATE ON "callback" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION host_in_flight_after_update();
CREATE TRIGGER "callback_host_rows" AFTER INSERT ON "callback" REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION host_rows_for_new_callbacks();

-- attempt: PARTITION BY RANGE (started_at), partitions of the same width, dropped the
-- same way. The table as it is becomes attempt_before, the partition of everything
-- started before the next hour but one (the check the preparation validated spares the
-- attach's scan; its bound is read back from it):
-- workers of the version before, still running during a rolling upgrade, write
-- attempts there meanwhile, as they make no partitions. Empty (a new install), its
-- bound is now. The service makes the partitions from the bound on, and drops this
-- one whole once its bound is past the retention window.
ALTER TABLE "attempt" RENAME TO "attempt_before";
CREATE TABLE "attempt" (LIKE "attempt_before" INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE ("started_at");
ALTER TABLE "attempt" DROP CONSTRAINT IF EXISTS "attempt_before_bound"; -- the old table's bound, copied by LIKE
ALTER SEQUENCE "attempt_id_seq" OWNED BY "attempt"."id";
DO $$
DECLARE
  prepared TEXT := (SELECT substring(pg_get_constraintdef(oid) FROM '''([^'']+)''') FROM pg_constraint
                    WHERE conrelid = '"attempt_before"'::regclass AND conname = 'attempt_before_bound' AND convalidated);
  bound TIMESTAMPTZ := COALESCE(prepared::timestamptz,
                                CASE WHEN EXISTS (SELECT 1 FROM "attempt_before") THEN date_trunc('hour', now()) + interval '2 hours' ELSE now() END);
BEGIN
  IF prepared IS NULL THEN
    EXECUTE format('ALTER TABLE "attempt_before" ADD CONSTRAINT "attempt_before_bound" CHECK ("started_at" < %L::timestamptz) NOT VALID', bound);
    ALTER TABLE "attempt_before" VALIDATE CONSTRAINT "attempt_before_bound";
  END IF;
  CREATE UNIQUE INDEX IF NOT EXISTS "attempt_before_pkey_new" ON "attempt_before" ("id", "started_at");
  ALTER TABLE "attempt_before" DROP CONSTRAINT "attempt_pkey";
  ALTER INDEX "attempt_before_pkey_new" RENAME TO "attempt_before_pkey";
  ALTER TABLE "attempt_before" ADD CONSTRAINT "attempt_before_pkey" PRIMARY KEY USING INDEX "attempt_before_pkey";
  ALTER INDEX "attempt_api_key_id_started_at_idx" RENAME TO "attempt_before_api_key_id_started_at_idx";
  ALTER INDEX "attempt_callback_id_number_idx" RENAME TO "attempt_before_callback_id_number_idx";
  ALTER INDEX "attempt_receiver_idx" RENAME TO "attempt_before_receiver_idx";
  EXECUTE format('ALTER TABLE "attempt" ATTACH PARTITION "attempt_before" FOR VALUES FROM (MINVALUE) TO (%L)', bound);
  ALTER TABLE "attempt_before" DROP CONSTRAINT "attempt_before_bound";
END $$;
ALTER TABLE "attempt" ADD CONSTRAINT "attempt_pkey" PRIMARY KEY ("id", "started_at");
CREATE INDEX "attempt_api_key_id_started_at_idx" ON "attempt" ("api_key_id", "started_at") INCLUDE ("host", "outcome", "duration_ms");
CREATE INDEX "attempt_callback_id_number_idx" ON "attempt" ("callback_id", "number");
CREATE INDEX "attempt_receiver_idx" ON "attempt" ("receiver_id", "started_at") INCLUDE ("outcome", "duration_ms") WHERE "receiver_id" IS NOT NULL;
