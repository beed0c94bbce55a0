-- Retention purge (src/retention) finds old finished rows through these. Both are
-- partial: only finished rows enter them, so they stay off the claim path, and a
-- callback row gets its entry once, when its write-back finishes it.
CREATE INDEX "callback_finished_idx" ON "callback"("completed_at") WHERE "status" IN ('succeeded', 'failed', 'cancelled');
CREATE INDEX "batch_completed_idx" ON "batch"("completed_at") WHERE "completed_at" IS NOT NULL;
