import { Injectable } from '@nestjs/common';
import { PrismaService } from '../database/prisma.service.js';

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
  constructor(private readonly prisma: PrismaService) {}

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
