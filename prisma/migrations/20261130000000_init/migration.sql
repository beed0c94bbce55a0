-- Initial schema: keys, batches, callbacks, attempts.
-- Status is text with a CHECK (not a PG enum) so the hot-path unnest statements need
-- no casts and new states are a one-line migration.

CREATE TABLE "api_key" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "is_admin" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),
    CONSTRAINT "api_key_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "api_key_hash_key" ON "api_key"("hash");

CREATE TABLE "signing_secret" (
    "id" UUID NOT NULL,
    "api_key_id" UUID NOT NULL,
    "secret" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3),
    CONSTRAINT "signing_secret_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "signing_secret_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_key"("id") ON DELETE RESTRICT ON UPDATE CASCADE
);
CREATE INDEX "signing_secret_api_key_id_idx" ON "signing_secret"("api_key_id");

CREATE TABLE "batch" (
    "id" UUID NOT NULL,
    "api_key_id" UUID NOT NULL,
    "label" TEXT,
    "idempotency_key" TEXT,
    "request_hash" TEXT,
    "total" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "completed_at" TIMESTAMPTZ(3),
    CONSTRAINT "batch_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "batch_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_key"("id") ON DELETE RESTRICT ON UPDATE CASCADE
);
CREATE UNIQUE INDEX "batch_api_key_id_idempotency_key_key" ON "batch"("api_key_id", "idempotency_key");
CREATE INDEX "batch_api_key_id_created_at_idx" ON "batch"("api_key_id", "created_at");
-- Serves the completion sweep: only batches still open are indexed.
CREATE INDEX "batch_open_idx" ON "batch"("created_at") WHERE "completed_at" IS NULL;

CREATE TABLE "callback" (
    "id" UUID NOT NULL,
    "batch_id" UUID NOT NULL,
    "api_key_id" UUID NOT NULL,
    "external_id" TEXT,
    "url" TEXT NOT NULL,
    "host" TEXT NOT NULL,
    "method" TEXT NOT NULL,
    "headers" JSONB NOT NULL DEFAULT '{}',
    "body" TEXT,
    "timeout_ms" INTEGER NOT NULL,
    "max_attempts" INTEGER NOT NULL,
    "retry_delays_ms" INTEGER[],
    "status" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL,
    "lease_owner" TEXT,
    "lease_expires_at" TIMESTAMPTZ(3),
    "last_status_code" INTEGER,
    "last_error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "completed_at" TIMESTAMPTZ(3),
    CONSTRAINT "callback_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "callback_status_check" CHECK ("status" IN ('pending', 'in_flight', 'succeeded', 'failed', 'cancelled')),
    CONSTRAINT "callback_batch_id_fkey" FOREIGN KEY ("batch_id") REFERENCES "batch"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX "callback_batch_id_status_idx" ON "callback"("batch_id", "status");
CREATE INDEX "callback_api_key_id_created_at_idx" ON "callback"("api_key_id", "created_at");
-- The claim reads only due pending rows: finished rows never enter this index, so a
-- table of millions of finished callbacks does not slow the hot path.
CREATE INDEX "callback_due_idx" ON "callback"("next_attempt_at") WHERE "status" = 'pending';
-- The lease reaper reads only in-flight rows.
CREATE INDEX "callback_lease_idx" ON "callback"("lease_expires_at") WHERE "status" = 'in_flight';

CREATE TABLE "attempt" (
    "id" BIGSERIAL NOT NULL,
    "callback_id" UUID NOT NULL,
    "api_key_id" UUID NOT NULL,
    "host" TEXT NOT NULL,
    "number" INTEGER NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "duration_ms" DOUBLE PRECISION NOT NULL,
    "dns_ms" DOUBLE PRECISION,
    "connect_ms" DOUBLE PRECISION,
    "tls_ms" DOUBLE PRECISION,
    "first_byte_ms" DOUBLE PRECISION,
    "status_code" INTEGER,
    "outcome" TEXT NOT NULL,
    "error" TEXT,
    "response_headers" JSONB,
    "response_body" TEXT,
    "worker" TEXT,
    CONSTRAINT "attempt_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "attempt_callback_id_fkey" FOREIGN KEY ("callback_id") REFERENCES "callback"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX "attempt_callback_id_number_idx" ON "attempt"("callback_id", "number");
CREATE INDEX "attempt_api_key_id_started_at_idx" ON "attempt"("api_key_id", "started_at");
