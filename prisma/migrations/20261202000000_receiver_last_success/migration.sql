-- The latest successful attempt of each receiver, at one-second granularity (the
-- write-back moves it only when it advances by a second or more, or while the
-- receiver is failing), so that a failure older than a newer success, landing after
-- it, cannot start `failing_since` again (outcome.sql.ts recordReceiverHealth).
-- Nullable, no default: adding it rewrites nothing.
ALTER TABLE "receiver" ADD COLUMN "last_success_at" TIMESTAMPTZ(3);
