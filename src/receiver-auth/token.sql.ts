import { Prisma } from '../generated/prisma/client.js';

/**
 * receiver_token: one row per version of a receiver's credentials, by its primary key
 * (receiver_id, version). The row holds the shared token, and the lease of the one
 * worker fetching the next (fetching_by, fetching_until); nothing holds a row lock
 * across a fetch, which takes as long as the token endpoint does.
 */

/** The stored token and whether a fetch is under way, by the database's clock. Reads, locks nothing. */
export const readToken = (receiverId: string, version: string) => Prisma.sql`
  SELECT token_id AS "tokenId", key_id AS "keyId", sealed, refresh_at AS "refreshAt", expires_at AS "expiresAt",
         coalesce(fetching_until > now(), false) AS fetching
  FROM receiver_token WHERE receiver_id = ${receiverId}::uuid AND version = ${version}::uuid`;

/**
 * Takes the lease to fetch the next token for `leaseMs`: only when no other worker
 * holds one, and the stored token is missing, due to be fetched again (refresh_at), or
 * the one `rejectedTokenId` names (a receiver answered 401 to it). One statement
 * (`ON CONFLICT … DO UPDATE … WHERE`): of workers asking at once, one gets a row back,
 * the others wait on its row lock for that statement only and then find the lease
 * held. Fails on the foreign key when this version of the credentials is gone.
 */
export const takeTokenLease = (receiverId: string, version: string, owner: string, leaseMs: number, rejectedTokenId: string | null) => Prisma.sql`
  INSERT INTO receiver_token (receiver_id, version, fetching_by, fetching_until)
  VALUES (${receiverId}::uuid, ${version}::uuid, ${owner}, now() + ${leaseMs}::int * interval '1 millisecond')
  ON CONFLICT (receiver_id, version) DO UPDATE SET fetching_by = EXCLUDED.fetching_by, fetching_until = EXCLUDED.fetching_until
  WHERE (receiver_token.fetching_until IS NULL OR receiver_token.fetching_until <= now())
    AND (receiver_token.token_id IS NULL OR receiver_token.refresh_at <= now() OR receiver_token.token_id = ${rejectedTokenId}::uuid)
  RETURNING true AS taken`;

export interface StoredToken {
  tokenId: string;
  keyId: string;
  sealed: string;
  fetchedAt: Date;
  refreshAt: Date;
  expiresAt: Date;
}

/** Stores the token `owner` fetched and ends its lease, if the lease is still its own (by primary key). */
export const storeToken = (receiverId: string, version: string, owner: string, t: StoredToken) => Prisma.sql`
  UPDATE receiver_token
  SET token_id = ${t.tokenId}::uuid, key_id = ${t.keyId}, sealed = ${t.sealed}, fetched_at = ${t.fetchedAt}::timestamptz,
      refresh_at = ${t.refreshAt}::timestamptz, expires_at = ${t.expiresAt}::timestamptz, fetching_by = NULL, fetching_until = NULL
  WHERE receiver_id = ${receiverId}::uuid AND version = ${version}::uuid AND fetching_by = ${owner}`;

/** Ends `owner`'s lease without a token (the fetch failed): the next worker that asks may try. */
export const releaseTokenLease = (receiverId: string, version: string, owner: string) => Prisma.sql`
  UPDATE receiver_token SET fetching_by = NULL, fetching_until = NULL
  WHERE receiver_id = ${receiverId}::uuid AND version = ${version}::uuid AND fetching_by = ${owner}`;
