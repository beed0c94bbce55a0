-- A receiver's unfinished callbacks (pending, held, in flight), for the receivers list's
-- health figures: one probe per receiver of the page counts them, instead of reading
-- every callback the receiver has kept (callback_receiver_idx, finished ones included,
-- up to RETENTION_HOURS of them). Rows without a receiver are not in it, so callbacks
-- sent by URL pay nothing; a receiver's callback gets an entry at ingest, at each claim
-- and at each retry (a finished row version gets none).
CREATE INDEX "callback_receiver_open_idx" ON "callback" ("receiver_id", "status", "held")
  WHERE "receiver_id" IS NOT NULL AND "status" IN ('pending', 'in_flight');
