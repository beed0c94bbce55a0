import { Injectable } from '@nestjs/common';
import { PrismaService } from '../database/prisma.service.js';

export interface SecretRow {
  id: string;
  apiKeyId: string;
  secret: string;
  createdAt: Date;
  expiresAt: Date | null;
}

@Injectable()
export class SigningSecretRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** Secrets that still sign: the current one (no expiry) and any in their overlap period. */
  findLiveSecrets(apiKeyIds: string[], now = new Date()): Promise<SecretRow[]> {
    return this.prisma.signingSecret.findMany({
      where: { apiKeyId: { in: apiKeyIds }, OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] },
      orderBy: { createdAt: 'desc' },
    });
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
