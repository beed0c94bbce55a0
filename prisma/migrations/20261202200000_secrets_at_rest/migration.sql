-- Signing secrets are stored sealed (AES-256-GCM) under SECRETS_KEY: key_id names the
-- key a row's secret is sealed under; null while it is still plain text, as every row
-- written before this migration is (the next start of the service seals them, in
-- chunks). Expired secrets are deleted by maintenance, through the partial index.
ALTER TABLE "signing_secret" ADD COLUMN "key_id" TEXT;
CREATE INDEX "signing_secret_expires_idx" ON "signing_secret" ("expires_at") WHERE "expires_at" IS NOT NULL;
