import { Injectable } from '@nestjs/common';
import { ApiDatabase } from '../database/api-database.js';
import { PrismaService } from '../database/prisma.service.js';
import { Prisma } from '../generated/prisma/client.js';

export interface ApiKeyRow {
  id: string;
  name: string;
  prefix: string;
  hash: string;
  isAdmin: boolean;
  weight: number;
  allowPrivateNetworks: boolean;
  createdAt: Date;
  revokedAt: Date | null;
}

@Injectable()
export class ApiKeyRepository {
  constructor(
    private readonly prisma: PrismaService,
    private readonly db: ApiDatabase,
  ) {}

  async updateKey(id: string, data: { weight?: number; allowPrivateNetworks?: boolean }): Promise<ApiKeyRow | null> {
    const { count } = await this.prisma.apiKey.updateMany({ where: { id }, data });
    return count === 1 ? this.prisma.apiKey.findUnique({ where: { id } }) : null;
  }

  insertKey(key: Omit<ApiKeyRow, 'createdAt' | 'revokedAt' | 'weight'>): Promise<ApiKeyRow> {
    return this.prisma.apiKey.create({ data: key });
  }

  findActiveByPrefix(prefix: string): Promise<ApiKeyRow[]> {
    return this.prisma.apiKey.findMany({ where: { prefix, revokedAt: null } });
  }

  /** The key with this hash, active or revoked (`api_key_hash_key`). */
  findByHash(hash: string): Promise<ApiKeyRow | null> {
    return this.prisma.apiKey.findUnique({ where: { hash } });
  }

  countActive(): Promise<number> {
    return this.prisma.apiKey.count({ where: { revokedAt: null } });
  }

  listKeys(): Promise<ApiKeyRow[]> {
    return this.prisma.apiKey.findMany({ orderBy: { createdAt: 'asc' } });
  }

  /**
   * Revokes an active key, unless it is the last active admin key. Revocations go one
   * after another (a transaction-scoped advisory lock): two admin keys revoked at once
   * would otherwise each see the other still active, and both go. Reads the primary
   * key, then the admin keys (a handful of rows, no index needed).
   */
  revokeKey(id: string): Promise<'revoked' | 'not_found' | 'last_admin'> {
    return this.db.transaction(async (tx) => {
      await tx.query(Prisma.sql`SELECT pg_advisory_xact_lock(hashtextextended('api key revocation', 0))`);
      const [row] = await tx.query<{ lastAdmin: boolean }>(Prisma.sql`
        SELECT k.is_admin AND NOT EXISTS (
          SELECT 1 FROM api_key o WHERE o.is_admin AND o.revoked_at IS NULL AND o.id <> k.id
        ) AS "lastAdmin"
        FROM api_key k WHERE k.id = ${id}::uuid AND k.revoked_at IS NULL`);
      if (!row) return 'not_found';
      if (row.lastAdmin) return 'last_admin';
      await tx.execute(Prisma.sql`UPDATE api_key SET revoked_at = now() WHERE id = ${id}::uuid`);
      return 'revoked';
    });
  }
}
