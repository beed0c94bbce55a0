-- Receivers that authenticate (issue 55) and delivery settings per event type.
--
-- receiver_credential: a receiver's `auth` (basic, bearer, oauth2 client credentials)
-- and `tls` (client certificate, key, CA), one row per receiver. What may be shown
-- (the type, a username, a token URL, a client id, certificates) is in `auth` and
-- `tls`; every secret (password, token, client secret, private key) is in `sealed`,
-- one JSON object sealed under the SECRETS_KEY `key_id` names (AES-256-GCM, the
-- receiver id and `version` as additional data, src/signing/secret-keyring.ts), so no
-- secret is in the table's plain text or a dump of it. A change of either writes a
-- new row with a new `version` (delete and insert): tokens fetched with the old
-- credentials go with the old row, and a worker still holding the old version cannot
-- store a token under it (the foreign key of receiver_token refuses it).
CREATE TABLE "receiver_credential" (
    "receiver_id" UUID NOT NULL,
    "version" UUID NOT NULL,
    "auth_type" TEXT,
    "auth" JSONB,
    "tls" JSONB,
    "key_id" TEXT NOT NULL,
    "sealed" TEXT NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "receiver_credential_pkey" PRIMARY KEY ("receiver_id"),
    CONSTRAINT "receiver_credential_version_key" UNIQUE ("receiver_id", "version"),
    CONSTRAINT "receiver_credential_auth_type_check" CHECK ("auth_type" IN ('basic', 'bearer', 'oauth2')),
    CONSTRAINT "receiver_credential_any_check" CHECK ("auth_type" IS NOT NULL OR "tls" IS NOT NULL)
);
ALTER TABLE "receiver_credential" ADD CONSTRAINT "receiver_credential_receiver_id_fkey" FOREIGN KEY ("receiver_id") REFERENCES "receiver"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- receiver_token: the OAuth2 access token of a receiver's credentials (receiver +
-- version), shared by every worker process, sealed like the credentials. `token_id`
-- is new with each token: a worker that got a 401 with a token names it to drop it,
-- so it never drops a newer one another worker fetched meanwhile. `fetching_by` and
-- `fetching_until` are a lease: the one worker that holds it fetches, the others read
-- what it stores, so a token is fetched once per expiry whatever the number of
-- workers; no transaction stays open across the fetch (a lease that runs out, its
-- worker gone, passes to the next one that asks).
CREATE TABLE "receiver_token" (
    "receiver_id" UUID NOT NULL,
    "version" UUID NOT NULL,
    "token_id" UUID,
    "key_id" TEXT,
    "sealed" TEXT,
    "fetched_at" TIMESTAMPTZ(3),
    "refresh_at" TIMESTAMPTZ(3),
    "expires_at" TIMESTAMPTZ(3),
    "fetching_by" TEXT,
    "fetching_until" TIMESTAMPTZ(3),
    CONSTRAINT "receiver_token_pkey" PRIMARY KEY ("receiver_id", "version"),
    CONSTRAINT "receiver_token_sealed_check" CHECK (("token_id" IS NULL) = ("sealed" IS NULL) AND ("sealed" IS NULL) = ("key_id" IS NULL)
                                                    AND ("sealed" IS NULL) = ("expires_at" IS NULL) AND ("sealed" IS NULL) = ("refresh_at" IS NULL))
);
ALTER TABLE "receiver_token" ADD CONSTRAINT "receiver_token_credential_fkey" FOREIGN KEY ("receiver_id", "version") REFERENCES "receiver_credential"("receiver_id", "version") ON DELETE CASCADE ON UPDATE CASCADE;

-- Delivery settings of an event type, for its deliveries: below the receiver's own,
-- above the service's configuration (NULL: not set).
ALTER TABLE "event_type" ADD COLUMN "timeout_ms" INTEGER, ADD COLUMN "max_attempts" INTEGER, ADD COLUMN "retry_delays_ms" INTEGER[];

-- Which authentication an attempt was sent with (basic, bearer, oauth2; NULL: none)
-- and, when it fetched an OAuth2 token first, how long that took. Nullable without a
-- default: no partition is rewritten.
ALTER TABLE "attempt" ADD COLUMN "auth" TEXT, ADD COLUMN "token_ms" DOUBLE PRECISION;
