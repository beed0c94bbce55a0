import { Injectable } from '@nestjs/common';
import { ApiDatabase } from '../database/api-database.js';
import { Prisma } from '../generated/prisma/client.js';
import { SecretKeyring } from '../config/secret-keyring.js';

export interface SecretRow {
  id: string;
  apiKeyId: string;
  receiverId: string | null;
  destination: string | null;
  secret: string;
  createdAt: Date;
  expiresAt: Date | null;
}

/** A row as stored: `secret` sealed under `keyId` (null: plain text). */
type StoredSecretRow = SecretRow & { keyId: string | null };

/** Whose secrets: a receiver's, or those of one destination (`scheme://host:port`) of a key. */
export type SecretOwner = { receiverId: string } | { apiKeyId: string; destination: string };

const COLUMNS = Prisma.sql`id, api_key_id AS "apiKeyId", receiver_id AS "receiverId", destination, secret, key_id AS "keyId",
  created_at AS "createdAt", expires_at AS "expiresAt"`;
const LIVE = Prisma.sql`(expires_at IS NULL OR expires_at > now())`;

const ownedBy = (o: SecretOwner) =>
  'receiverId' in o ? Prisma.sql`receiver_id = ${o.receiverId}::uuid` : Prisma.sql`api_key_id = ${o.apiKeyId}::uuid AND destination = ${o.destination}`;

/**
 * Signing secrets as the service uses them: sealed under the keyring's current key on
 * the way in, opened on the way out; nothing else reads or writes the secret column
 * (except secret-reseal.ts, which re-seals them).
 */
@Injectable()
export class SigningSecretRepository {
  constructor(
    private readonly db: ApiDatabase,
    private readonly keyring: SecretKeyring,
  ) {}

  /** A new secret row's id, key id and sealed secret, for an insert of its own (a receiver's first secret). */
  sealNew(id: string, secret: string): { id: string; keyId: string; sealed: string } {
    return { id, ...this.keyring.seal(id, secret) };
  }

  private opened(rows: StoredSecretRow[]): SecretRow[] {
    return rows.map(({ keyId, ...row }) => ({ ...row, secret: this.keyring.open(row.id, keyId, row.secret) }));
  }

  /**
   * Secrets that still sign (the current one and any in its overlap period) of these
   * receivers and these (key, destination) pairs, newest first, in one statement:
   * `signing_secret_receiver_id_idx` for the first, `signing_secret_destination_idx`
   * for the second. Reads, locks nothing.
   */
  async findLiveSecrets(receiverIds: string[], destinations: Array<{ apiKeyId: string; destination: string }>): Promise<SecretRow[]> {
    return this.opened(
      await this.db.query<StoredSecretRow>(Prisma.sql`
      SELECT ${COLUMNS} FROM signing_secret
      WHERE receiver_id = ANY(${receiverIds}::uuid[]) AND ${LIVE}
      UNION ALL
      SELECT ${COLUMNS} FROM signing_secret
      WHERE (api_key_id, destination) IN (
              SELECT * FROM unnest(${destinations.map((d) => d.apiKeyId)}::uuid[], ${destinations.map((d) => d.destination)}::text[]))
        AND ${LIVE}
      ORDER BY "createdAt" DESC, id DESC`),
    );
  }

  /** The live secrets of one owner, newest first. */
  async findSecretsOf(owner: SecretOwner): Promise<SecretRow[]> {
    return this.opened(
      await this.db.query<StoredSecretRow>(Prisma.sql`
        SELECT ${COLUMNS} FROM signing_secret WHERE ${ownedBy(owner)} AND ${LIVE} ORDER BY created_at DESC, id DESC`),
    );
  }

  /**
   * A current secret for each (key, destination) that has none, in one statement;
   * `ON CONFLICT DO NOTHING` on `signing_secret_destination_current_key`, so two
   * callers at once make one (the second waits for the first to commit, then skips).
   * Locks only the new rows (and, on a conflict, that index entry).
   */
  async insertDestinationSecrets(rows: Array<{ id: string; apiKeyId: string; destination: string; secret: string }>): Promise<void> {
    if (rows.length === 0) return;
    const sealed = rows.map((r) => this.keyring.seal(r.id, r.secret));
    await this.db.execute(Prisma.sql`
      INSERT INTO signing_secret (id, api_key_id, destination, key_id, secret)
      SELECT * FROM unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.apiKeyId)}::uuid[],
                           ${rows.map((r) => r.destination)}::text[], ${sealed.map((s) => s.keyId)}::text[], ${sealed.map((s) => s.sealed)}::text[])
      ON CONFLICT (api_key_id, destination) WHERE expires_at IS NULL AND destination IS NOT NULL DO NOTHING`);
  }

  /**
   * Ends the owner's current secret after `overlapMs` and makes `next` current, in one
   * transaction (the unique current-secret index holds at its end). A secret still in
   * the overlap of an earlier rotation ends now: two secrets sign at most, the current
   * and the one it replaced (rotated nine times in a day, nine signed each call).
   * Rotations of one owner go one after another (a transaction-scoped advisory lock on
   * the owner): two at once both ended the same current secret and both inserted a new
   * one, and the second failed on the unique index (a 500).
   */
  async rotateSecret(apiKeyId: string, owner: SecretOwner, next: { id: string; secret: string }, overlapMs: number): Promise<void> {
    const receiverId = 'receiverId' in owner ? owner.receiverId : null;
    const destination = 'destination' in owner ? owner.destination : null;
    const sealed = this.keyring.seal(next.id, next.secret);
    const ownerKey = receiverId !== null ? `receiver ${receiverId}` : `destination ${apiKeyId} ${destination}`;
    await this.db.transaction(async (tx) => {
      await tx.query(Prisma.sql`SELECT pg_advisory_xact_lock(hashtextextended(${`signing secret rotation of ${ownerKey}`}, 0))`);
      await tx.execute(Prisma.sql`
        UPDATE signing_secret
        SET expires_at = CASE WHEN expires_at IS NULL THEN now() + ${overlapMs}::int * interval '1 millisecond' ELSE now() END
        WHERE ${ownedBy(owner)} AND (expires_at IS NULL OR expires_at > now())`);
      await tx.execute(Prisma.sql`
        INSERT INTO signing_secret (id, api_key_id, receiver_id, destination, key_id, secret)
        VALUES (${next.id}::uuid, ${apiKeyId}::uuid, ${receiverId}::uuid, ${destination}, ${sealed.keyId}, ${sealed.sealed})`);
    });
  }
}
