-- Receiver portal sessions (src/portal): a page the sender hands one receiver, showing
-- only that receiver's deliveries. The token the receiver holds is signed by the
-- service and names this row; the row is what makes it valid (capabilities, expiry,
-- revocation), so revoking is one UPDATE and takes effect on the next request.
CREATE TABLE "portal_session" (
    "id" UUID NOT NULL,
    "api_key_id" UUID NOT NULL,
    "receiver_id" UUID NOT NULL,
    -- read, replay, rotate, edit; read is always held
    "capabilities" TEXT[] NOT NULL,
    -- CSS variable overrides the portal page applies (JSON object of --name: value), or null
    "theme" JSONB,
    -- where the portal's "back" link goes (the sender's app), or null
    "return_url" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "revoked_at" TIMESTAMPTZ(3),
    CONSTRAINT "portal_session_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "portal_session_capabilities_check" CHECK ('read' = ANY ("capabilities") AND "capabilities" <@ ARRAY['read', 'replay', 'rotate', 'edit']::text[])
);
ALTER TABLE "portal_session" ADD CONSTRAINT "portal_session_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_key"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
-- A deleted receiver takes its sessions with it.
ALTER TABLE "portal_session" ADD CONSTRAINT "portal_session_receiver_id_fkey" FOREIGN KEY ("receiver_id") REFERENCES "receiver"("id") ON DELETE CASCADE ON UPDATE CASCADE;
-- DELETE …/portal-sessions revokes a receiver's live sessions; the cascade finds them too.
CREATE INDEX "portal_session_receiver_idx" ON "portal_session" ("receiver_id");
