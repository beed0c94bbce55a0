-- Recoveries: a bulk replay of a key's failed (or cancelled) callbacks, chosen by
-- receiver, destination, batch and a window of their acceptance times, sent again in
-- chunks by a task of kind 'recovery' whose id is the recovery's (src/recoveries). The
-- task keeps the walk's cursor and how many it requeued; this row keeps what it
-- matches, and goes with its task when retention purges it.
CREATE TABLE "recovery" (
    "id" UUID NOT NULL,
    "api_key_id" UUID NOT NULL,
    -- filters; no foreign keys: a receiver deleted or a batch purged meanwhile simply matches nothing more
    "receiver_id" UUID,
    "host" TEXT,
    "batch_id" UUID,
    "statuses" TEXT[] NOT NULL,
    -- the window, on the callbacks' acceptance time (their UUIDv7 ids): [since, until)
    "since" TIMESTAMPTZ(3),
    "until" TIMESTAMPTZ(3) NOT NULL,
    -- the priority the recovered callbacks go at (0 high, 1 normal, 2 low)
    "priority" SMALLINT NOT NULL,
    -- callbacks that matched when it was made
    "matched" INTEGER NOT NULL,
    CONSTRAINT "recovery_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "recovery_priority_check" CHECK ("priority" >= 0 AND "priority" <= 2),
    CONSTRAINT "recovery_statuses_check" CHECK (cardinality("statuses") >= 1 AND "statuses" <@ ARRAY['failed', 'cancelled']::text[])
);
ALTER TABLE "recovery" ADD CONSTRAINT "recovery_id_fkey" FOREIGN KEY ("id") REFERENCES "task"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "recovery" ADD CONSTRAINT "recovery_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_key"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- The recovery that last requeued a callback, for its progress (delivered, failed):
-- counted per status through callback_recovery_idx, which holds only recovered rows.
ALTER TABLE "callback" ADD COLUMN "recovery_id" UUID;
CREATE INDEX "callback_recovery_idx" ON "callback" ("recovery_id", "status") WHERE "recovery_id" IS NOT NULL;

ALTER TABLE "task" DROP CONSTRAINT "task_kind_check";
ALTER TABLE "task" ADD CONSTRAINT "task_kind_check" CHECK ("kind" IN ('receiver.disable', 'receiver.enable', 'receiver.delete', 'batch.retry', 'recovery'));
ALTER TABLE "task" DROP CONSTRAINT "task_status_check";
ALTER TABLE "task" ADD CONSTRAINT "task_status_check" CHECK ("status" IN ('running', 'finished', 'superseded', 'cancelled'));
