import { Injectable } from '@nestjs/common';
import { DispatchDatabase } from '../database/dispatch-database.js';
import { PrismaService } from '../database/prisma.service.js';
import { Prisma } from '../generated/prisma/client.js';

/** A receiver's transform as the worker reads it. */
export interface TransformRow {
  receiverId: string;
  receiver: string;
  code: string;
}

/** A callback's stored request, for a transform's test run on a past delivery. */
export interface StoredRequestRow {
  id: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | null;
  attempts: number;
}

@Injectable()
export class TransformRepository {
  constructor(
    private readonly db: DispatchDatabase,
    private readonly prisma: PrismaService,
  ) {}

  /**
   * The transforms of those of these receivers that have one, with their names: the
   * worker's lookup for a claim's rows (TransformService.transformsFor), on its own pool.
   * By primary key (`receiver_pkey`); reads, locks nothing.
   */
  findTransforms(receiverIds: string[]): Promise<TransformRow[]> {
    return this.db.query<TransformRow>(Prisma.sql`
      SELECT id AS "receiverId", name AS receiver, transform_code AS code
      FROM receiver WHERE id = ANY(${receiverIds}::uuid[]) AND transform_code IS NOT NULL`);
  }

  /**
   * The stored request of a callback of this key and receiver, or null (another
   * receiver's is none). An event's delivery sends its event's body, stored there once
   * (`body_event_id`), as the claim fills it in.
   */
  async findDelivery(apiKeyId: string, receiverId: string, id: string): Promise<StoredRequestRow | null> {
    const found = await this.prisma.callback.findFirst({
      where: { id, apiKeyId, receiverId },
      select: { id: true, method: true, url: true, headers: true, body: true, attempts: true, bodyEventId: true },
    });
    if (!found) return null;
    const { bodyEventId, ...stored } = found;
    const body = bodyEventId ? ((await this.prisma.event.findUnique({ where: { id: bodyEventId }, select: { body: true } }))?.body ?? null) : stored.body;
    return { ...stored, body } as StoredRequestRow;
  }
}
