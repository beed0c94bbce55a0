-- Events: one message of a type, published once and delivered to every receiver
-- that subscribed to it. Its deliveries are ordinary callbacks of a batch of their
-- own (batch_id), stored in the same transaction as the event; the event goes with
-- that batch when retention purges it (ON DELETE CASCADE).
CREATE TABLE "event" (
    "id" UUID NOT NULL,
    "api_key_id" UUID NOT NULL,
    -- the sender's id for it (idempotent per key), or "id" as text when none was given
    "event_id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    -- sha256 of the request: a replay of event_id with another body is a 409
    "request_hash" TEXT NOT NULL,
    "batch_id" UUID NOT NULL,
    "deliveries" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "event_pkey" PRIMARY KEY ("id")
);
ALTER TABLE "event" ADD CONSTRAINT "event_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_key"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "event" ADD CONSTRAINT "event_batch_id_fkey" FOREIGN KEY ("batch_id") REFERENCES "batch"("id") ON DELETE CASCADE ON UPDATE CASCADE;
CREATE UNIQUE INDEX "event_api_key_id_event_id_key" ON "event" ("api_key_id", "event_id");
-- the listing, newest first, all types or one
CREATE INDEX "event_api_key_id_id_idx" ON "event" ("api_key_id", "id");
CREATE INDEX "event_api_key_id_type_id_idx" ON "event" ("api_key_id", "type", "id");
-- the cascade from a purged batch
CREATE INDEX "event_batch_id_idx" ON "event" ("batch_id");
