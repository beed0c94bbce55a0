-- The worker that last claimed a host's rows, and until when the other workers
-- leave that host's freed slots to it (HOST_AFFINITY_MS): several workers at one
-- host's cap otherwise hand its slots back and forth, each claim of a few rows.
-- Nullable, no default: no table rewrite.
ALTER TABLE "host" ADD COLUMN "claimed_by" TEXT;
ALTER TABLE "host" ADD COLUMN "claimed_until" TIMESTAMPTZ(3);
