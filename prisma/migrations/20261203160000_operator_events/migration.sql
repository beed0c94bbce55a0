-- Operator events (src/operator-events): what happens to a key's traffic (a batch
-- completed, a callback exhausted, a receiver failing, disabled or enabled, a host's
-- breaker, a recovery completed), sent to the key's own endpoint. The endpoint is a
-- receiver row of the key with a name no API can give ('/operator': '/' is never in a
-- receiver's name), so it has what a receiver has: its own whsec_ secrets and their
-- rotation, its health, held callbacks while disabled, retries and history. This row
-- says which receiver that is and which event types it takes (null: all).
CREATE TABLE "operator_endpoint" (
    "api_key_id" UUID NOT NULL,
    "receiver_id" UUID NOT NULL,
    "event_types" TEXT[],
    -- the destination (scheme://host:port) of its receiver's url, which its deliveries are counted under
    "host" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "operator_endpoint_pkey" PRIMARY KEY ("api_key_id")
);
CREATE UNIQUE INDEX "operator_endpoint_receiver_id_key" ON "operator_endpoint"("receiver_id");
ALTER TABLE "operator_endpoint" ADD CONSTRAINT "operator_endpoint_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_key"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "operator_endpoint" ADD CONSTRAINT "operator_endpoint_receiver_id_fkey" FOREIGN KEY ("receiver_id") REFERENCES "receiver"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- A batch's own target for its batch.completed (POST /v1/batches `notify`), and the
-- mark of a batch that carries an operator event's deliveries: its completion and its
-- callbacks' failures cause no operator events (no event about an event).
ALTER TABLE "batch" ADD COLUMN "notify_url" TEXT;
ALTER TABLE "batch" ADD COLUMN "notify_host" TEXT;
ALTER TABLE "batch" ADD COLUMN "notify_receiver_id" UUID;
ALTER TABLE "batch" ADD COLUMN "operator_event" BOOLEAN NOT NULL DEFAULT false;

-- recovery.completed is sent once a recovery is done (or cancelled) and everything it
-- requeued has settled; the maintenance leader finds those through this index and
-- stamps notified_at in the statement that stores the event.
ALTER TABLE "recovery" ADD COLUMN "notified_at" TIMESTAMPTZ(3);
UPDATE "recovery" SET "notified_at" = now(); -- those made before this release send nothing
CREATE INDEX "recovery_unnotified_idx" ON "recovery" ("id") WHERE "notified_at" IS NULL;

-- A UUIDv7 made in SQL (Postgres 18 has uuidv7(); 15 to 17 do not): ids of operator
-- events' rows, which are made by the statements that change the state they report.
-- Callback ids must be UUIDv7 (recoveries read their acceptance time from them).
CREATE FUNCTION "operator_uuidv7"() RETURNS uuid LANGUAGE sql VOLATILE AS $$
  SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
           PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
         52, 1), 53, 1), 'hex')::uuid
$$;
