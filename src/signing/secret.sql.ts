import { Prisma } from '../generated/prisma/client.js';

/** The lowest uuid: where a walk over signing_secret by id starts. */
export const FIRST_ID = '00000000-0000-0000-0000-000000000000';

/**
 * Up to `limit` secrets after `afterId` (by id, signing_secret_pkey) not sealed under
 * `keyId`: plain text ones only, or any other key's as well. Locks them until the
 * chunk's transaction ends (a rotation of one of them waits that long, a few ms).
 */
export const secretsToSeal = (keyId: string, afterId: string, limit: number, plainTextOnly: boolean) => Prisma.sql`
  SELECT id, key_id AS "keyId", secret FROM signing_secret
  WHERE id > ${afterId}::uuid AND ${plainTextOnly ? Prisma.sql`key_id IS NULL` : Prisma.sql`key_id IS DISTINCT FROM ${keyId}`}
  ORDER BY id LIMIT ${limit}::int
  FOR UPDATE`;

/** Stores the secrets as sealed, by primary key. */
export const storeSealed = (rows: ReadonlyArray<{ id: string; keyId: string; sealed: string }>) => Prisma.sql`
  UPDATE signing_secret s SET key_id = v.key_id, secret = v.secret
  FROM unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.keyId)}::text[], ${rows.map((r) => r.sealed)}::text[]) AS v(id, key_id, secret)
  WHERE s.id = v.id`;

/**
 * How many secrets each key seals (keyId null: plain text): signing secrets and
 * receivers' credentials (receiver_credential, always sealed). Reads both whole
 * tables: at start and on request only.
 */
export const secretsPerKey = () => Prisma.sql`
  SELECT key_id AS "keyId", count(*)::int AS secrets
  FROM (SELECT key_id FROM signing_secret UNION ALL SELECT key_id FROM receiver_credential) s
  GROUP BY key_id ORDER BY key_id NULLS FIRST`;

/** Deletes up to `limit` secrets past their overlap period (signing_secret_expires_idx); returns how many. */
export const deleteExpiredSecrets = (limit: number) => Prisma.sql`
  DELETE FROM signing_secret WHERE id IN (
    SELECT id FROM signing_secret WHERE expires_at IS NOT NULL AND expires_at <= now()
    ORDER BY expires_at LIMIT ${limit}::int
    FOR UPDATE SKIP LOCKED)`;
