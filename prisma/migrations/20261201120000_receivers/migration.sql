-- Receivers: the parties a key calls back, each with its own signing secrets and
-- settings; and signing secrets per destination for callbacks without a receiver.
--
-- Until now one secret per API key signed every callback, so every customer of a key
-- could verify, and so forge, the callbacks of every other. Those per-key secrets are
-- deleted here: nothing signs with them any more (see the README, "Signing secrets").

CREATE TABLE "receiver" (
    "id" UUID NOT NULL,
    "api_key_id" UUID NOT NULL,
    -- the sender's own id for this party (`merchant-42`), unique per key
    "name" TEXT NOT NULL,
    "url" TEXT,
    "description" TEXT,
    "headers" JSONB NOT NULL DEFAULT '{}',
    "timeout_ms" INTEGER,
    "max_attempts" INTEGER,
    "retry_delays_ms" INTEGER[],
    "disabled" BOOLEAN NOT NULL DEFAULT false,
    "disabled_reason" TEXT,
    "disabled_at" TIMESTAMPTZ(3),
    -- the first failed attempt since the last success (null: the last attempt succeeded,
    -- or none yet), and the latest failed one: the maintenance leader disables a receiver
    -- whose failures span RECEIVER_DISABLE_AFTER_HOURS without a success
    "failing_since" TIMESTAMPTZ(3),
    "last_failure_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "receiver_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "receiver_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_key"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
    CONSTRAINT "receiver_disabled_check" CHECK ("disabled" = ("disabled_at" IS NOT NULL))
);
CREATE UNIQUE INDEX "receiver_api_key_id_name_key" ON "receiver"("api_key_id", "name");
-- The auto-disable task reads only receivers that are failing and still enabled.
CREATE INDEX "receiver_failing_idx" ON "receiver"("failing_since") WHERE "failing_since" IS NOT NULL AND NOT "disabled";

-- Signing secrets belong to a receiver or to one (key, destination), never to a key.
DELETE FROM "signing_secret";
ALTER TABLE "signing_secret"
    ADD COLUMN "receiver_id" UUID,
    ADD COLUMN "destination" TEXT,
    ADD CONSTRAINT "signing_secret_receiver_id_fkey" FOREIGN KEY ("receiver_id") REFERENCES "receiver"("id") ON DELETE CASCADE ON UPDATE CASCADE,
    ADD CONSTRAINT "signing_secret_owner_check" CHECK (num_nonnulls("receiver_id", "destination") = 1);
DROP INDEX "signing_secret_api_key_id_idx";
CREATE INDEX "signing_secret_receiver_id_idx" ON "signing_secret"("receiver_id") WHERE "receiver_id" IS NOT NULL;
CREATE INDEX "signing_secret_destination_idx" ON "signing_secret"("api_key_id", "destination") WHERE "destination" IS NOT NULL;
-- At most one current secret (no expiry) per receiver and per (key, destination):
-- the ingest's "made on first use" insert is ON CONFLICT DO NOTHING on the second.
CREATE UNIQUE INDEX "signing_secret_receiver_current_key" ON "signing_secret"("receiver_id") WHERE "expires_at" IS NULL AND "receiver_id" IS NOT NULL;
CREATE UNIQUE INDEX "signing_secret_destination_current_key" ON "signing_secret"("api_key_id", "destination") WHERE "expires_at" IS NULL AND "destination" IS NOT NULL;

-- A callback names its receiver (or none). `held`: its receiver is disabled, so the
-- claim passes it over (a filter on the row the due walk already reads, no probe of
-- receiver per row); set at ingest and flipped with the receiver's `disabled`, for
-- its unfinished callbacks, in the same transaction.
ALTER TABLE "callback"
    ADD COLUMN "receiver_id" UUID,
    ADD COLUMN "held" BOOLEAN NOT NULL DEFAULT false,
    ADD CONSTRAINT "callback_receiver_id_fkey" FOREIGN KEY ("receiver_id") REFERENCES "receiver"("id") ON DELETE SET NULL ON UPDATE CASCADE;
-- A receiver's callbacks in id order (`GET /v1/callbacks?receiver=`, its figures, the
-- held flip, the cancel at delete). Only rows with a receiver enter it, so callbacks
-- without one cost nothing more.
CREATE INDEX "callback_receiver_idx" ON "callback"("receiver_id", "id") WHERE "receiver_id" IS NOT NULL;

-- A receiver's attempts over time: its figures and `GET /v1/history/latency?receiver=`.
ALTER TABLE "attempt" ADD COLUMN "receiver_id" UUID;
CREATE INDEX "attempt_receiver_idx" ON "attempt"("receiver_id", "started_at") INCLUDE ("outcome", "duration_ms") WHERE "receiver_id" IS NOT NULL;
