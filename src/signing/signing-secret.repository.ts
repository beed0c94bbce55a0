import { Injectable } from '@nestjs/common';
import { ApiDatabase } from '../database/api-database.js';
import { PrismaService } from '../database/prisma.service.js';
import { Prisma } from '../generated/prisma/client.js';

export interface SecretRow {
  id: string;
  apiKeyId: string;
  secret: string;
  createdAt: Date;
  expiresAt: Date | null;
}

@Injectable()
export class SigningSecretRepository {
  constructor(
    private readonly prisma: PrismaService,
    private readonly db: ApiDatabase,
  ) {}

  /** Secrets that still sign: the current one (no expiry) and any in their overlap period. */
  findLiveSecrets(apiKeyIds: string[], now = new Date()): Promise<SecretRow[]> {
    return this.prisma.signingSecret.findMany({
      where: { apiKeyId: { in: apiKeyIds }, OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] },
      orderBy: { createdAt: 'desc' },
    });
  }

  /**
   * A current secret for each existing key that has none (a key's first), in one statement;
   * returns those inserted. Two callers at once may both insert one: harmless, the
   * newest signs and the other keeps verifying until rotated away.
   */
  insertFirstSecrets(rows: Array<{ apiKeyId: string; id: string; secret: string }>): Promise<SecretRow[]> {
    if (rows.length === 0) return Promise.resolve([]);
    return this.db.query<SecretRow>(Prisma.sql`
      INSERT INTO signing_secret (id, api_key_id, secret)
      SELECT n.id, n.api_key_id, n.secret
      FROM unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.apiKeyId)}::uuid[], ${rows.map((r) => r.secret)}::text[])
           AS n(id, api_key_id, secret)
      JOIN api_key k ON k.id = n.api_key_id
      WHERE NOT EXISTS (SELECT 1 FROM signing_secret s WHERE s.api_key_id = n.api_key_id AND s.expires_at IS NULL)
      RETURNING id, api_key_id AS "apiKeyId", secret, created_at AS "createdAt", expires_at AS "expiresAt"`);
  }

  /** Ends the current secret after `overlapMs` and adds `next` as current, atomically. */
  async rotateSecret(apiKeyId: string, next: { id: string; secret: string }, overlapMs: number): Promise<void> {
    await this.prisma.$transaction([
      this.prisma.signingSecret.updateMany({
        where: { apiKeyId, expiresAt: null },
        data: { expiresAt: new Date(Date.now() + overlapMs) },
      }),
      this.prisma.signingSecret.create({ data: { ...next, apiKeyId } }),
    ]);
  }
}
