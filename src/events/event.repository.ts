import { Injectable } from '@nestjs/common';
import { BatchRepository, type NewBatch, type NewCallback } from '../batches/batch.repository.js';
import { ApiDatabase } from '../database/api-database.js';
import { DueNotifier } from '../database/due.notifier.js';
import { PrismaService } from '../database/prisma.service.js';
import { Prisma, type Event } from '../generated/prisma/client.js';
import { subscribersOf, type SubscriberRow } from './subscriber.sql.js';

export type EventRow = Event;
/** An event without its payload, as listings read it. */
export type EventSummaryRow = Pick<Event, 'id' | 'eventId' | 'type' | 'deliveries' | 'batchId' | 'createdAt'>;

export interface NewEvent {
  id: string;
  apiKeyId: string;
  eventId: string;
  type: string;
  payload: unknown;
  requestHash: string;
  batchId: string;
  deliveries: number;
}

export interface DeliveryRow {
  callbackId: string;
  receiver: string | null;
  status: string;
  held: boolean;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
}

/**
 * The batch of an event no receiver takes: complete when stored (completed_at = its
 * created_at), as a batch whose callbacks have all finished is. Through the ingest's
 * statement it was stored open, read as completed by GET /v1/batches but with no
 * completedAt, held in batch_open_idx until the leader's sweep stamped it (never, with no
 * worker running), and kept from the retention purge, which takes completed batches only
 * (test/event-caps.e2e.test.ts). Its id has no other row yet: nothing to lock.
 */
const insertEmptyBatch = (batch: NewBatch) => Prisma.sql`
  INSERT INTO batch (id, api_key_id, label, total, created_at, completed_at)
  VALUES (${batch.id}::uuid, ${batch.apiKeyId}::uuid, ${batch.label}, 0, now(), now())`;

/** Thrown inside the insert's transaction to roll it back: another event holds the id. */
class DuplicateEvent extends Error {}

@Injectable()
export class EventRepository {
  constructor(
    private readonly prisma: PrismaService,
    private readonly db: ApiDatabase,
    private readonly batches: BatchRepository,
    private readonly due: DueNotifier,
  ) {}

  findSubscribers(apiKeyId: string, patterns: string[], names?: string[]): Promise<SubscriberRow[]> {
    return this.db.query<SubscriberRow>(subscribersOf(apiKeyId, patterns, names));
  }

  findEvent(apiKeyId: string, eventId: string): Promise<EventRow | null> {
    return this.prisma.event.findUnique({ where: { apiKeyId_eventId: { apiKeyId, eventId } } });
  }

  /**
   * Stores the event, its batch and its deliveries in one transaction: the batch and
   * callbacks through the ingest's own statement (BatchRepository.insertBatchIn:
   * receivers read FOR SHARE, a disabled one's deliveries held), then the event row
   * `ON CONFLICT (api_key_id, event_id) DO NOTHING`. When another event holds the id
   * (a concurrent publish of the same id waits for its commit on that unique index),
   * the whole transaction is rolled back and `false` answered: nothing of this one
   * is stored (null). Wakes the workers after the commit. Answers the event's
   * created_at.
   */
  async insertEvent(event: NewEvent, batch: NewBatch, rows: NewCallback[]): Promise<Date | null> {
    let createdAt: Date;
    try {
      createdAt = await this.db.transaction(async (tx) => {
        if (rows.length === 0) await tx.query(insertEmptyBatch(batch));
        else await this.batches.insertBatchIn(tx, batch, rows);
        const [inserted] = await tx.query<{ createdAt: Date }>(Prisma.sql`
          INSERT INTO event (id, api_key_id, event_id, type, payload, request_hash, batch_id, deliveries)
          VALUES (${event.id}::uuid, ${event.apiKeyId}::uuid, ${event.eventId}, ${event.type}, ${JSON.stringify(event.payload)}::jsonb,
                  ${event.requestHash}, ${event.batchId}::uuid, ${event.deliveries}::int)
          ON CONFLICT (api_key_id, event_id) DO NOTHING
          RETURNING created_at AS "createdAt"`);
        if (!inserted) throw new DuplicateEvent();
        return inserted.createdAt;
      });
    } catch (error) {
      if (error instanceof DuplicateEvent) return null;
      throw error;
    }
    if (rows.length > 0) this.due.notifyDue();
    return createdAt;
  }

  /** A page, newest first, after `before` (the last id of the previous page): event_api_key_id_type_id_idx or event_api_key_id_id_idx. */
  listEvents(apiKeyId: string, q: { type?: string; since?: Date; before?: string; limit: number }): Promise<EventSummaryRow[]> {
    return this.prisma.event.findMany({
      // payloads may be 256 KiB each: a page leaves them out
      select: { id: true, eventId: true, type: true, deliveries: true, batchId: true, createdAt: true },
      where: {
        apiKeyId,
        ...(q.type !== undefined && { type: q.type }),
        ...(q.since !== undefined && { createdAt: { gte: q.since } }),
        ...(q.before !== undefined && { id: { lt: q.before } }),
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
