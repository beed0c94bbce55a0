import { Injectable } from '@nestjs/common';
import { STATUS_COLUMNS, type CallbackStatusRow } from '../callbacks/callback.repository.js';
import type { CallbackStatus } from '../model/states.js';
import { uuidFloorOf } from '../common/uuid.js';
import { PrismaService } from '../database/prisma.service.js';
import type { Reader } from '../database/read-replica.js';
import type { Prisma } from '../generated/prisma/client.js';

export interface PortalSessionRow {
  id: string;
  apiKeyId: string;
  receiverId: string;
  receiverName: string;
  capabilities: string[];
  theme: Record<string, string> | null;
  returnUrl: string | null;
  expiresAt: Date;
}

export interface DeliveryFilter {
  apiKeyId: string;
  receiverId: string;
  status?: CallbackStatus;
  since?: Date;
  until?: Date;
  eventType?: string;
  /** id of the last row of the previous page (newest first: the next page is older) */
  before?: string;
  limit: number;
}

@Injectable()
export class PortalSessionRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * Stores a session, and drops the receiver's sessions that can no longer be used
   * (expired or revoked), so a receiver holds at most the sessions minted while live
   * ones last (portal_session_receiver_idx).
   */
  async insertSession(row: Omit<PortalSessionRow, 'receiverName'>, now: Date): Promise<void> {
    await this.prisma.$transaction([
      this.prisma.portalSession.deleteMany({ where: { receiverId: row.receiverId, OR: [{ expiresAt: { lte: now } }, { revokedAt: { not: null } }] } }),
      this.prisma.portalSession.create({ data: { ...row, theme: row.theme ?? undefined } }),
    ]);
  }

  /**
   * The live session `id`: not revoked, not expired, its receiver still there, and its
   * API key not revoked (a key revoked takes its portals with it). One read by primary
   * key per portal request; the receiver row gives the name the services look up by.
   */
  async findLiveSession(id: string, now: Date): Promise<PortalSessionRow | undefined> {
    const row = await this.prisma.portalSession.findFirst({
      where: { id, revokedAt: null, expiresAt: { gt: now } },
    });
    if (!row) return undefined;
    const [receiver, key] = await Promise.all([
      // a receiver being deleted (its row kept until its delete task ends) has no portal any more
      this.prisma.receiver.findFirst({ where: { id: row.receiverId, apiKeyId: row.apiKeyId, deletedAt: null }, select: { name: true } }),
      this.prisma.apiKey.findFirst({ where: { id: row.apiKeyId, revokedAt: null }, select: { id: true } }),
    ]);
    if (!receiver || !key) return undefined;
    return { ...row, receiverName: receiver.name, theme: row.theme as Record<string, string> | null };
  }

  /** Revokes every live session of the receiver (portal_session_receiver_idx); answers how many. */
  async revokeSessions(receiverId: string, now: Date): Promise<number> {
    const { count } = await this.prisma.portalSession.updateMany({ where: { receiverId, revokedAt: null, expiresAt: { gt: now } }, data: { revokedAt: now } });
    return count;
  }

  /**
   * The receiver's callbacks, newest first: callback_receiver_idx (receiver_id, id)
   * walked backwards from `before`, down to the id floor of `since`; status and event
   * type are filters on that walk.
   */
  /** A page of the receiver's deliveries, newest first; on `reader` (a read replica, ReadReplica) or the primary. */
  listDeliveries(f: DeliveryFilter, reader?: Reader): Promise<CallbackStatusRow[]> {
    const id: Prisma.StringFilter = {};
    if (f.before) id.lt = f.before;
    if (f.since) id.gte = uuidFloorOf(f.since);
    if (f.until) id.lt = f.before && f.before < uuidFloorOf(f.until) ? f.before : uuidFloorOf(f.until);
    return (reader?.prisma ?? this.prisma).callback.findMany({
      where: {
        apiKeyId: f.apiKeyId,
        receiverId: f.receiverId,
        ...(Object.keys(id).length > 0 && { id }),
        ...(f.status && { status: f.status }),
        ...(f.eventType && { batch: { events: { some: { type: f.eventType } } } }),
      },
      orderBy: { id: 'desc' },
      take: f.limit,
      select: STATUS_COLUMNS,
    }) as Promise<CallbackStatusRow[]>;
  }

  /**
   * What a callback of this receiver sends (its stored request), or null when it is not
   * this receiver's. An event's delivery sends its event's body, stored there once.
   */
  async findRequest(apiKeyId: string, receiverId: string, id: string) {
    const found = await this.prisma.callback.findFirst({
      where: { id, apiKeyId, receiverId },
      select: { id: true, method: true, url: true, headers: true, body: true, bodyEventId: true },
    });
    if (!found?.bodyEventId) return found;
    const event = await this.prisma.event.findUnique({ where: { id: found.bodyEventId }, select: { body: true } });
    return { ...found, body: event?.body ?? null };
  }

  /** Whether the recovery `id` of the key is limited to this receiver. */
  async recoveryOfReceiver(apiKeyId: string, receiverId: string, id: string): Promise<boolean> {
    return (await this.prisma.recovery.count({ where: { id, apiKeyId, receiverId } })) > 0;
  }
}
