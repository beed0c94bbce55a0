import { Injectable } from '@nestjs/common';
import { PrismaService } from '../database/prisma.service.js';

export interface ApiKeyRow {
  id: string;
  name: string;
  prefix: string;
  hash: string;
  isAdmin: boolean;
  createdAt: Date;
  revokedAt: Date | null;
}

@Injectable()
export class ApiKeyRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** Creates the key and its first signing secret in one transaction. */
  async insertKey(key: Omit<ApiKeyRow, 'createdAt' | 'revokedAt'>, secret: { id: string; secret: string }): Promise<ApiKeyRow> {
    const [row] = await this.prisma.$transaction([
      this.prisma.apiKey.create({ data: key }),
      this.prisma.signingSecret.create({ data: { ...secret, apiKeyId: key.id } }),
    ]);
    return row;
  }

  findActiveByPrefix(prefix: string): Promise<ApiKeyRow[]> {
    return this.prisma.apiKey.findMany({ where: { prefix, revokedAt: null } });
  }

  countActive(): Promise<number> {
    return this.prisma.apiKey.count({ where: { revokedAt: null } });
  }

  listKeys(): Promise<ApiKeyRow[]> {
    return this.prisma.apiKey.findMany({ orderBy: { createdAt: 'asc' } });
  }

  async revokeKey(id: string): Promise<boolean> {
    const { count } = await this.prisma.apiKey.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: new Date() } });
    return count === 1;
  }
}
