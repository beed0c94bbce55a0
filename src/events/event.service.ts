import { Injectable, Logger } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { PendingQuota } from '../batches/pending-quota.service.js';
import { AppError, notFound } from '../common/app.error.js';
import { pageOf } from '../common/page.js';
import { priorityRank } from '../model/states.js';
import { uuidv7 } from '../common/uuid.js';
import { destinationOf, MAX_HEADERS, unstorableTextAt, unstorableTextProblem } from '../common/validators.js';
import { AppConfig } from '../config/app.config.js';
import { ReadReplica } from '../database/read-replica.js';
import { CALLBACK_RECEIVER_FKEY, isForeignKeyViolation } from '../database/database.errors.js';
import { ReceiverService } from '../receivers/receiver.service.js';
import type { AcceptedEventDto, EventDetailDto, EventPageDto, EventSummaryDto, PublishEventDto } from './dto/event.dto.js';
import type { Filter } from '../receivers/event-filter.policy.js';
import { patternsOf, typeNameProblem } from '../receivers/event-type.policy.js';
import { EventTypeRepository, type EventTypeRow } from './event-type.repository.js';
import { EventRepository, type EventSummaryRow } from './event.repository.js';
import { PayloadCheckPool } from './payload-check.pool.js';
import type { NewDeliveries } from './delivery.sql.js';
import type { EventPreviewDto, PreviewEventDto } from './dto/event-preview.dto.js';
import { previewVerdict, type PreviewCandidate } from './event-preview.policy.js';
import type { SubscriberRow } from './subscriber.sql.js';

/** Headers of every delivery besides the Standard Webhooks ones: the event's id and type (webhook-id stays the delivery's own). */
export const EVENT_ID_HEADER = 'webhook-event-id';
export const EVENT_TYPE_HEADER = 'webhook-event-type';
/** `GET /v1/events/{id}` shows this many deliveries; the batch's callbacks page through all. */
const DELIVERIES_SHOWN = 1000;

export interface PublishedEvent extends AcceptedEventDto {
  /** True when the id was published before with the same body: this is that event. */
  replayed: boolean;
}

@Injectable()
export class EventService {
  private readonly logger = new Logger(EventService.name);

  constructor(
    private readonly events: EventRepository,
    private readonly types: EventTypeRepository,
    private readonly checks: PayloadCheckPool,
    private readonly receivers: ReceiverService,
    private readonly quota: PendingQuota,
    private readonly config: AppConfig,
    private readonly reads: ReadReplica,
  ) {}

  /**
   * Stores the event and one callback per receiver that takes it: subscribed to its
   * type (by name or `prefix.*`), its filter passing, named in `receivers` when that
   * is given, not deleted. Each callback is made as a batch's naming the receiver
   * would be (the receiver's url, settings, headers and secret), all in one statement
   * with the event (insertEventStatement). Nothing is stored when the type is unknown,
   * the payload fails its schema or the subscribers are more than EVENT_MAX_DELIVERIES.
   */
  async publishEvent(apiKeyId: string, given: PublishEventDto, traceparent: string | null): Promise<PublishedEvent> {
    // null stands for left out (the DTO's optional fields let it through)
    const dto: PublishEventDto = {
      type: given.type,
      payload: given.payload,
      id: given.id ?? undefined,
      receivers: given.receivers ?? undefined,
      orderingKey: given.orderingKey ?? undefined,
      priority: given.priority ?? undefined,
    };
    const typeProblem = typeNameProblem(dto.type);
    if (typeProblem) throw new AppError('validation_failed', `type: ${typeProblem}`);
    if (dto.payload === undefined) throw new AppError('validation_failed', 'payload is required (any JSON value)');
    const textProblem = unstorableTextProblem('payload', dto.payload);
    if (textProblem) throw new AppError('validation_failed', textProblem, { path: unstorableTextAt(dto.payload) });
    const requestHash = createHash('sha256').update(JSON.stringify(dto)).digest('hex');
    if (dto.id !== undefined) {
      const existing = await this.events.findEvent(apiKeyId, dto.id);
      if (existing) return replay(existing, requestHash);
    }
    const eventType = await this.types.findEventType(apiKeyId, dto.type);
    const body = await this.checkPayload(dto.type, dto.payload, eventType);
    if (dto.receivers) await this.receivers.resolve(apiKeyId, dto.receivers);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.store(apiKeyId, dto, body, requestHash, traceparent, eventType!);
      } catch (error) {
        // a subscriber deleted between the lookup and the insert (which reads it FOR SHARE): look them up again
        if (attempt === 2 || !isForeignKeyViolation(error, CALLBACK_RECEIVER_FKEY)) throw error;
      }
    }
  }

  private async store(
    apiKeyId: string,
    dto: PublishEventDto,
    body: string,
    requestHash: string,
    traceparent: string | null,
    eventType: EventTypeRow,
  ): Promise<PublishedEvent> {
    const subscribers = await this.passing(await this.events.findSubscribers(apiKeyId, patternsOf(dto.type), dto.receivers), body);
    this.checkFanOut(dto.type, subscribers.length);
    const id = uuidv7();
    const eventId = dto.id ?? id;
    const deliveries = this.deliveries(subscribers, dto, eventId, traceparent, eventType);
    const event = { id, apiKeyId, eventId, type: dto.type, body, requestHash, batchId: uuidv7(), label: `event ${dto.type}` };
    const n = subscribers.length;
    // its payload is stored once for all its deliveries, so it counts once against the bytes pending (none without deliveries)
    const bytes = n > 0 ? Buffer.byteLength(body) : 0;
    await this.quota.admit(apiKeyId, n, bytes);
    let createdAt: Date | null;
    try {
      createdAt = await this.events.insertEvent(event, deliveries);
    } catch (error) {
      this.quota.notStored(apiKeyId, n, bytes);
      throw error;
    }
    if (!createdAt) {
      // the same id published at the same moment: the first one stands
      this.quota.notStored(apiKeyId, n, bytes);
      const existing = await this.events.findEvent(apiKeyId, eventId);
      if (!existing) throw new Error(`event ${eventId} was not inserted, and no event holds its id`);
      return replay(existing, requestHash);
    }
    this.logger.log({
      msg: `event ${eventId} (${dto.type}) published: ${n} deliveries`,
      event: 'event_published',
      eventId,
      type: dto.type,
      deliveries: n,
    });
    return { id: eventId, type: dto.type, deliveries: n, batchId: event.batchId, createdAt: createdAt.toISOString(), replayed: false };
  }

  /**
   * EVENT_MAX_DELIVERIES bounds what one request may store, as MAX_CALLBACKS_PER_BATCH
   * does for a batch (and with the same answer, 413): an event past it is refused whole,
   * before any row is made, so a key whose receivers grew past the cap finds out at once
   * instead of one publish writing 100,000 callbacks in one transaction.
   */
  private checkFanOut(type: string, deliveries: number): void {
    const max = this.config.eventMaxDeliveries;
    if (deliveries <= max) return;
    throw new AppError(
      'payload_too_large',
      `event of type ${type} would make ${deliveries} deliveries, more than EVENT_MAX_DELIVERIES (${max}); nothing was stored: name its receivers (receivers: [...]) or narrow the subscriptions`,
      { deliveries, max },
    );
  }

  /**
   * One callback per subscriber, made as a batch's callback naming the receiver would be
   * (BatchService.toRow: the receiver's url, headers, timeout, attempts and retry delays,
   * else the configured ones) by the insert itself (insertEventStatement): here only
   * what needs Node per subscriber (its callback id, its url's destination) and the
   * checks a batch's callback gets. The payload as JSON is every delivery's body,
   * stored once on the event; the event's id and type go in headers of their own.
   */
  private deliveries(subscribers: SubscriberRow[], dto: PublishEventDto, eventId: string, traceparent: string | null, eventType: EventTypeRow): NewDeliveries {
    // the type's settings stand between the receiver's own and the service's (guide: Event types, delivery settings)
    const typeTimeoutMs = eventType.timeoutMs ?? this.config.httpTimeoutMs;
    const headers = { 'content-type': 'application/json', [EVENT_ID_HEADER]: eventId, [EVENT_TYPE_HEADER]: dto.type };
    const own = Object.keys(headers);
    const callbackIds: string[] = [];
    const hosts: string[] = [];
    for (const r of subscribers) {
      if ((r.timeoutMs ?? typeTimeoutMs) > this.config.httpMaxTimeoutMs) {
        throw new AppError('validation_failed', `receiver ${r.name}: timeoutMs must be at most ${this.config.httpMaxTimeoutMs}`);
      }
      const theirs = Object.keys(r.headers as Record<string, string>).filter((h) => !own.includes(h.toLowerCase())).length;
      if (theirs + own.length > MAX_HEADERS)
        throw new AppError('validation_failed', `receiver ${r.name} has more than ${MAX_HEADERS} headers with the event's`);
      callbackIds.push(uuidv7());
      hosts.push(destinationOf(r.url));
    }
    return {
      callbackIds,
      receiverIds: subscribers.map((r) => r.id),
      urls: subscribers.map((r) => r.url),
      hosts,
      headers: JSON.stringify(headers),
      priority: priorityRank(dto.priority ?? 'normal'),
      // ordering holds per receiver: one receiver's slow endpoint never holds back another's deliveries
      orderingKey: dto.orderingKey?.toWellFormed() ?? null,
      traceparent,
      timeoutMs: typeTimeoutMs,
      maxAttempts: eventType.maxAttempts ?? this.config.defaultMaxAttempts,
      retryDelaysMs: eventType.retryDelaysMs?.length ? eventType.retryDelaysMs : null,
    };
  }

  /**
   * The payload as the body every delivery sends; a 413 past MAX_CALLBACK_BODY_BYTES,
   * a 400 naming the JSON path when it fails the type's schema. The schema is applied
   * in a payload check thread, within EVENT_CHECK_BUDGET_MS (PayloadCheckPool).
   */
  private async checkPayload(type: string, payload: unknown, eventType: { schema: unknown } | null): Promise<string> {
    if (!eventType) throw new AppError('validation_failed', `unknown event type ${type} (create it with PUT /v1/event-types/${type})`);
    const body = JSON.stringify(payload);
    if (Buffer.byteLength(body) > this.config.maxCallbackBodyBytes) {
      throw new AppError('payload_too_large', `payload is larger than ${this.config.maxCallbackBodyBytes} bytes (MAX_CALLBACK_BODY_BYTES)`);
    }
    if (eventType.schema !== null) {
      const problem = await this.checks.problemOf(JSON.stringify(eventType.schema), body, type);
      if (problem) {
        throw new AppError('validation_failed', `payload${problem.path ? ` at ${problem.path}` : ''} ${problem.message} (schema of ${type})`, {
          path: problem.path,
        });
      }
    }
    return body;
  }

  /** The subscribers whose filter the payload passes (those without one take every event), evaluated in a payload check thread. */
  private async passing(subscribers: SubscriberRow[], body: string): Promise<SubscriberRow[]> {
    const failing = await this.failingFilters(subscribers, body);
    return subscribers.filter((r) => !failing.has(r));
  }

  /** The receivers whose filter the payload (JSON text) fails, evaluated in a payload check thread. */
  private async failingFilters<R extends { eventFilter: unknown }>(receivers: R[], body: string): Promise<Set<R>> {
    const filtered = receivers.filter((r) => r.eventFilter !== null);
    const passes = await this.checks.matching(
      filtered.map((r) => r.eventFilter as Filter),
      body,
    );
    return new Set(filtered.filter((_, i) => !passes[i]));
  }

  /**
   * Who would get this event now and who would not, and why (event-preview.policy.ts),
   * read as a publish reads it: the named receivers, or every one subscribed to the
   * type. The schema and the filters are applied in a payload check thread, within
   * EVENT_CHECK_BUDGET_MS, as a publish applies them. Stores and sends nothing.
   */
  async previewEvent(apiKeyId: string, dto: PreviewEventDto): Promise<EventPreviewDto> {
    const typeProblem = typeNameProblem(dto.type);
    if (typeProblem) throw new AppError('validation_failed', `type: ${typeProblem}`);
    if (dto.payload === undefined) throw new AppError('validation_failed', 'payload is required (any JSON value)');
    let problem: string | null = null;
    let body: string | undefined;
    try {
      body = await this.checkPayload(dto.type, dto.payload, await this.types.findEventType(apiKeyId, dto.type));
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      problem = error.message;
    }
    const patterns = patternsOf(dto.type);
    const candidates: PreviewCandidate[] = dto.receivers
      ? [...(await this.receivers.resolve(apiKeyId, dto.receivers)).values()]
      : await this.events.findSubscribers(apiKeyId, patterns);
    // a refused event is refused for everyone: its filters are not evaluated
    const failing = body === undefined ? new Set<PreviewCandidate>() : await this.failingFilters(candidates, body);
    const receivers = candidates.map((r) => previewVerdict(r, patterns, !failing.has(r), problem));
    return { type: dto.type, problem, deliveries: receivers.filter((r) => r.delivers).length, receivers };
  }

  /** A page of the key's events, newest first, on the replica when it serves the key (ReadReplica). */
  async listEvents(apiKeyId: string, q: { type?: string; since?: Date; cursor?: string; limit: number }): Promise<EventPageDto> {
    if (q.type !== undefined) {
      const problem = typeNameProblem(q.type);
      if (problem) throw new AppError('validation_failed', `type: ${problem}`);
    }
    const read = await this.reads.read(apiKeyId, (reader) =>
      this.events.listEvents(apiKeyId, { type: q.type, since: q.since, before: q.cursor, limit: q.limit + 1 }, reader),
    );
    const { rows, nextCursor } = pageOf(read, q.limit, (r) => r.id);
    return { items: rows.map(toEventSummary), nextCursor };
  }

  async getEvent(apiKeyId: string, eventId: string): Promise<EventDetailDto> {
    const row = await this.events.findEvent(apiKeyId, eventId);
    if (!row) throw notFound('event');
    const deliveries = await this.events.deliveriesOf(row.batchId, DELIVERIES_SHOWN);
    // published events keep their payload as the text their deliveries send; operator events (and older ones) as JSON
    return { ...toEventSummary(row), payload: row.body !== null ? JSON.parse(row.body) : row.payload, callbacks: deliveries };
  }
}

function toEventSummary(r: EventSummaryRow): EventSummaryDto {
  return { id: r.eventId, type: r.type, deliveries: r.deliveries, batchId: r.batchId, createdAt: r.createdAt.toISOString() };
}

function replay(existing: EventSummaryRow & { requestHash: string }, requestHash: string): PublishedEvent {
  if (existing.requestHash !== requestHash) {
    throw new AppError('idempotency_conflict', `event ${existing.eventId} was published before with a different body`, { id: existing.eventId });
  }
  return { ...toEventSummary(existing), replayed: true };
}
