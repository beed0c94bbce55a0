import { Injectable } from '@nestjs/common';
import { ApiDatabase } from '../database/api-database.js';
import { DueNotifier } from '../database/due.notifier.js';
import { PrismaService } from '../database/prisma.service.js';
import type { Reader } from '../database/read-replica.js';
import { idFloorOfStoredSince } from '../common/uuid.js';
import { Prisma, type Event } from '../generated/prisma/client.js';
import { insertEventStatement, type NewDeliveries, type NewEvent } from './delivery.sql.js';
import { subscribersOf, type SubscriberRow } from './subscriber.sql.js';

export type EventRow = Event;
/** An event without its payload, as listings read it. */
export type EventSummaryRow = Pick<Event, 'id' | 'eventId' | 'type' | 'deliveries' | 'batchId' | 'createdAt'>;

export interface DeliveryRow {
  callbackId: string;
  receiver: string | null;
  status: string;
  held: boolean;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
}

@Injectable()
export class EventRepository {
  /** The primary, where a read goes unless given a replica's reader (ReadReplica). */
  private readonly primary: Reader;

  constructor(
    private readonly prisma: PrismaService,
    private readonly db: ApiDatabase,
    private readonly due: DueNotifier,
  ) {
    this.primary = { prisma, db };
  }

  findSubscribers(apiKeyId: string, patterns: string[], names?: string[]): Promise<SubscriberRow[]> {
    return this.db.query<SubscriberRow>(subscribersOf(apiKeyId, patterns, names));
  }

  findEvent(apiKeyId: string, eventId: string): Promise<EventRow | null> {
    return this.prisma.event.findUnique({ where: { apiKeyId_eventId: { apiKeyId, eventId } } });
  }

  /**
   * Stores the event, its batch and its deliveries in one statement
   * (insertEventStatement), then wakes the workers. Answers the event's created_at, or
   * null when another event holds its id (nothing of this one is stored).
   */
  async insertEvent(event: NewEvent, deliveries: NewDeliveries): Promise<Date | null> {
    const [inserted] = await this.db.query<{ createdAt: Date }>(insertEventStatement(event, deliveries));
    if (!inserted) return null;
    if (deliveries.callbackIds.length > 0) this.due.notifyDue(deliveries.priority);
    return inserted.createdAt;
  }

  /** A page, newest first, after `before` (the last id of the previous page): event_api_key_id_type_id_idx or event_api_key_id_id_idx. */
  listEvents(apiKeyId: string, q: { type?: string; since?: Date; before?: string; limit: number }, reader = this.primary): Promise<EventSummaryRow[]> {
    return reader.prisma.event.findMany({
      // payloads may be 256 KiB each: a page leaves them out
      select: { id: true, eventId: true, type: true, deliveries: true, batchId: true, createdAt: true },
      where: {
        apiKeyId,
        ...(q.type !== undefined && { type: q.type }),
        ...(q.since !== undefined && { createdAt: { gte: q.since } }),
        // the same bound on the ids (UUIDv7 made at acceptance, less CLOCK_MARGIN_MS): the walk down the index stops
        // there, where with created_at alone a since after the newest events read every older one of the key
        ...((q.since !== undefined || q.before !== undefined) && {
          id: {
            ...(q.since !== undefined && { gte: idFloorOfStoredSince(q.since) }),
            ...(q.before !== undefined && { lt: q.before }),
          },
        }),
      },
      orderBy: { id: 'desc' },
      take: q.limit,
    });
  }

  /** Its first `limit` deliveries in id order, each with its receiver's name (callback_batch_id_status_idx, then by primary key). */
  deliveriesOf(batchId: string, limit: number): Promise<DeliveryRow[]> {
    return this.db.query<DeliveryRow>(Prisma.sql`
      SELECT c.id AS "callbackId", CASE WHEN r.deleted_at IS NULL THEN r.name END AS receiver, c.status, c.held, c.attempts,
             c.last_status_code AS "lastStatusCode", c.last_error AS "lastError"
      FROM callback c LEFT JOIN receiver r ON r.id = c.receiver_id
      WHERE c.batch_id = ${batchId}::uuid
      ORDER BY c.id LIMIT ${limit}::int`);
  }
}
