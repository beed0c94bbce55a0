-- Event types: the names a key publishes events under (`order.paid`), each with an
-- optional JSON Schema (draft 2020-12) its payloads must pass. One key's types are
-- its own, as its receivers are: the primary key starts with the key.
CREATE TABLE "event_type" (
    "api_key_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "schema" JSONB,
    "deprecated" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "event_type_pkey" PRIMARY KEY ("api_key_id", "name")
);
ALTER TABLE "event_type" ADD CONSTRAINT "event_type_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_key"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
