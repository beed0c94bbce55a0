-- Private destinations per key. ALLOW_PRIVATE_NETWORKS names the ranges an install may
-- call beyond the public internet; now only a key granted `allow_private_networks`
-- (by an admin: PATCH /v1/keys/{id}) has its callbacks sent there, checked where each
-- call's address is resolved. Existing admin keys keep what they had (the bootstrap
-- key among them, so a one-team install works as before); other keys lose it until an
-- admin grants it. No table rewrite: a constant default.
ALTER TABLE "api_key" ADD COLUMN "allow_private_networks" BOOLEAN NOT NULL DEFAULT false;
UPDATE "api_key" SET "allow_private_networks" = true WHERE "is_admin";

-- The destinations (scheme://host:port) a portal session has pointed the receiver at.
-- The portal is for people outside the sender: its callbacks to those go to public
-- addresses only, whatever its key is granted, and whatever the name resolves to
-- later. Kept when the key sets another URL, for the callbacks still pending with the
-- portal's.
ALTER TABLE "receiver" ADD COLUMN "portal_hosts" TEXT[] NOT NULL DEFAULT '{}';
