-- An event's payload is stored once, on the event, as the JSON text its deliveries send
-- (`body`); each delivery names the event it takes its body from (`body_event_id`) and
-- holds no body of its own. Before, every delivery held a copy: one 48 KiB event to 200
-- receivers stored 200 copies, and the write-back copied each again into its history
-- partition. The claim reads an event's body once per claim (claim.sql.ts).
--
-- Events stored before keep their `payload` (jsonb) and their deliveries their bodies;
-- new published events have `body` and no `payload`; operator events (whose deliveries
-- wrap the payload in an envelope of their own) keep `payload`. One or the other, never
-- both. The event lives as long as its batch (event_batch_id_fkey, ON DELETE CASCADE),
-- which retention deletes only once none of its callbacks is left, so a delivery's
-- event is there while the delivery is.
--
-- `batch.body_bytes`: the payload bytes the batch stored (its callbacks' bodies; an
-- event's payload once), for MAX_PENDING_BYTES_PER_KEY, which sums it over the key's
-- open batches (the next migration indexes them). Batches stored before count 0.
--
-- No table rewrite: nullable columns without default on callback (every partition) and
-- event, a constant default on batch; the check scans event once.
ALTER TABLE "event" ADD COLUMN "body" TEXT;
ALTER TABLE "event" ALTER COLUMN "payload" DROP NOT NULL;
ALTER TABLE "event" ADD CONSTRAINT "event_payload_or_body_check" CHECK (("payload" IS NULL) <> ("body" IS NULL));
ALTER TABLE "callback" ADD COLUMN "body_event_id" UUID;
ALTER TABLE "batch" ADD COLUMN "body_bytes" BIGINT NOT NULL DEFAULT 0;
