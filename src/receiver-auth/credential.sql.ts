import { Prisma } from '../generated/prisma/client.js';

/**
 * Statements of receiver_credential and receiver_token. Each receiver has at most one
 * credential row (receiver_credential_pkey on receiver_id); a change replaces it with
 * a new `version` (delete and insert, in the caller's transaction), and its tokens go
 * with the old row (receiver_token_credential_fkey, ON DELETE CASCADE).
 */

const CREDENTIAL = Prisma.sql`receiver_id AS "receiverId", version, auth_type AS "authType", auth, tls, key_id AS "keyId", sealed`;

/** The credential row of one receiver, locked `FOR UPDATE` until the caller's transaction ends (by receiver_credential_pkey). */
export const lockCredential = (receiverId: string) => Prisma.sql`
  SELECT ${CREDENTIAL} FROM receiver_credential WHERE receiver_id = ${receiverId}::uuid FOR UPDATE`;

/**
 * The credential rows of these receivers (receiver_credential_pkey), unlocked: what the
 * worker sends with; each with what its token requests may reach, by the rule the claim
 * applies to callbacks (claim.sql.ts `moved`): its key's grant of private networks
 * (api_key_pkey) and the destinations a portal session chose for the receiver
 * (`portal_hosts`, receiver_pkey).
 */
export const credentialsOf = (receiverIds: string[]) => Prisma.sql`
  SELECT c.receiver_id AS "receiverId", c.version, c.auth_type AS "authType", c.auth, c.tls, c.key_id AS "keyId", c.sealed,
         k.allow_private_networks AS "keyPrivateNetworks", rv.portal_hosts AS "portalHosts"
  FROM receiver_credential c
  JOIN receiver rv ON rv.id = c.receiver_id
  JOIN api_key k ON k.id = rv.api_key_id
  WHERE c.receiver_id = ANY(${receiverIds}::uuid[])`;

/** Deletes the receiver's credentials and, by the foreign key, their tokens. */
export const deleteCredential = (receiverId: string) => Prisma.sql`DELETE FROM receiver_credential WHERE receiver_id = ${receiverId}::uuid`;

export interface CredentialRow {
  receiverId: string;
  version: string;
  authType: string | null;
  auth: unknown;
  tls: unknown;
  keyId: string;
  sealed: string;
}

/** A credential row as the worker reads it (credentialsOf). */
export interface SendingCredentialRow extends CredentialRow {
  keyPrivateNetworks: boolean;
  portalHosts: string[];
}

export const insertCredential = (r: CredentialRow) => Prisma.sql`
  INSERT INTO receiver_credential (receiver_id, version, auth_type, auth, tls, key_id, sealed)
  VALUES (${r.receiverId}::uuid, ${r.version}::uuid, ${r.authType}, ${r.auth === null ? null : JSON.stringify(r.auth)}::jsonb,
          ${r.tls === null ? null : JSON.stringify(r.tls)}::jsonb, ${r.keyId}, ${r.sealed})`;

/** Up to `limit` credentials after `afterId` (by receiver_credential_pkey) not sealed under `keyId`, locked for the chunk's transaction (re-sealing). */
export const credentialsToSeal = (keyId: string, afterId: string, limit: number) => Prisma.sql`
  SELECT receiver_id AS id, version, key_id AS "keyId", sealed FROM receiver_credential
  WHERE receiver_id > ${afterId}::uuid AND key_id <> ${keyId}
  ORDER BY receiver_id LIMIT ${limit}::int
  FOR UPDATE`;

/** Stores re-sealed credentials by primary key; their version (the sealing's additional data) stays. */
export const storeSealedCredentials = (rows: ReadonlyArray<{ id: string; keyId: string; sealed: string }>) => Prisma.sql`
  UPDATE receiver_credential c SET key_id = v.key_id, sealed = v.sealed
  FROM unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.keyId)}::text[], ${rows.map((r) => r.sealed)}::text[]) AS v(id, key_id, sealed)
  WHERE c.receiver_id = v.id`;

/**
 * Drops cached tokens not sealed under `keyId` (a key rotation): they are a cache, and
 * the next call that needs one fetches it anew. Reads the whole (small: one row per
 * OAuth2 receiver) table.
 */
export const dropTokensNotUnder = (keyId: string) => Prisma.sql`
  DELETE FROM receiver_token WHERE key_id IS NOT NULL AND key_id <> ${keyId}`;
