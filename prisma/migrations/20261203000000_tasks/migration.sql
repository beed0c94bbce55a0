-- Work on many callbacks at once (a receiver disabled, enabled or deleted, a batch
-- retried) runs as a task: chunks of rows, each chunk its own short transaction,
-- the task's row keeping where it got to, so no statement holds locks on a whole
-- backlog, and the work survives a crash of the process running it (the
-- maintenance leader resumes a task nobody moved for a while: task_open_idx).
CREATE TABLE "task" (
    "id" UUID NOT NULL,
    "api_key_id" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'running',
    "receiver_id" UUID,
    "batch_id" UUID,
    "statuses" TEXT[],
    "cursor" UUID,
    "done" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),
    CONSTRAINT "task_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "task_kind_check" CHECK ("kind" IN ('receiver.disable', 'receiver.enable', 'receiver.delete', 'batch.retry')),
    CONSTRAINT "task_status_check" CHECK ("status" IN ('running', 'finished', 'superseded'))
);
ALTER TABLE "task" ADD CONSTRAINT "task_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_key"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
CREATE INDEX "task_open_idx" ON "task" ("updated_at") WHERE "status" = 'running';
CREATE INDEX "task_receiver_idx" ON "task" ("receiver_id", "created_at") WHERE "receiver_id" IS NOT NULL;
CREATE INDEX "task_finished_idx" ON "task" ("finished_at") WHERE "finished_at" IS NOT NULL;

-- A deleted receiver stays, renamed out of the way and disabled, until its delete
-- task has cancelled its callbacks and detached them (then its row goes).
ALTER TABLE "receiver" ADD COLUMN "deleted_at" TIMESTAMPTZ(3);
