-- Who goes next (the scheduling issue): fair share between keys, priorities within a
-- key, ordered delivery within an ordering key. See src/dispatch/sql/claim.sql.ts.

-- A key's weight in the fair share of every claim (an admin sets it).
ALTER TABLE "api_key" ADD COLUMN "weight" INTEGER NOT NULL DEFAULT 1,
  ADD CONSTRAINT "api_key_weight_check" CHECK ("weight" BETWEEN 1 AND 1000);

-- priority: 0 high, 1 normal, 2 low (src/common/states.ts PRIORITIES), so that
-- "high first" is an ascending index order.
ALTER TABLE "callback" ADD COLUMN "priority" SMALLINT NOT NULL DEFAULT 1,
  ADD COLUMN "ordering_key" TEXT,
  ADD CONSTRAINT "callback_priority_check" CHECK ("priority" BETWEEN 0 AND 2),
  ADD CONSTRAINT "callback_ordering_key_check" CHECK (char_length("ordering_key") BETWEEN 1 AND 200);

-- The claim's walk, key by key and priority by priority, oldest due first: the keys
-- with pending rows by a loose scan of it, then each key's due rows of each priority
-- as one range. Pending rows only (rows leave it when claimed).
CREATE INDEX "callback_key_due_idx" ON "callback"("api_key_id", "priority", "next_attempt_at") WHERE "status" = 'pending';

-- Ordered delivery: a callback with an ordering key may go only when no earlier one
-- (smaller id: accepted earlier) of the same key and ordering key is unfinished. One
-- probe of this index per such row; finished rows leave it.
CREATE INDEX "callback_ordering_idx" ON "callback"("api_key_id", "ordering_key", "id")
  WHERE "ordering_key" IS NOT NULL AND "status" IN ('pending', 'in_flight');
