import { Injectable } from '@nestjs/common';
import { AppError, notFound } from '../common/app.error.js';
import { pageOf } from '../common/page.js';
import { unstorableTextProblem } from '../common/validators.js';
import { AppConfig } from '../config/app.config.js';
import type { EventTypeDto, EventTypePageDto, PutEventTypeDto } from './dto/event-type.dto.js';
import { typeNameProblem } from '../receivers/event-type.policy.js';
import { EventTypeRepository, type EventTypeRow } from './event-type.repository.js';
import { PayloadCheckPool } from './payload-check.pool.js';

/** A type's schema, as JSON, is at most this many bytes. */
export const MAX_SCHEMA_BYTES = 65_536;

export function toEventTypeView(r: EventTypeRow): EventTypeDto {
  return {
    name: r.name,
    description: r.description,
    schema: r.schema,
    deprecated: r.deprecated,
    timeoutMs: r.timeoutMs,
    maxAttempts: r.maxAttempts,
    retryDelaysMs: r.retryDelaysMs ?? [],
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
  };
}

@Injectable()
export class EventTypeService {
  constructor(
    private readonly types: EventTypeRepository,
    private readonly checks: PayloadCheckPool,
    private readonly config: AppConfig,
  ) {}

  /** Creates (created: true) or updates the type; a schema is compiled first, so an invalid one stores nothing. */
  async putEventType(apiKeyId: string, name: string, dto: PutEventTypeDto): Promise<{ created: boolean; type: EventTypeDto }> {
    checkName(name);
    if (dto.schema !== undefined && dto.schema !== null) await this.checkSchema(dto.schema);
    if (dto.timeoutMs != null && dto.timeoutMs > this.config.httpMaxTimeoutMs) {
      throw new AppError('validation_failed', `timeoutMs must be at most ${this.config.httpMaxTimeoutMs} (HTTP_MAX_TIMEOUT_MS)`);
    }
    const { row, created } = await this.types.upsertEventType(apiKeyId, name, {
      description: dto.description,
      schema: dto.schema,
      deprecated: dto.deprecated ?? undefined,
      timeoutMs: dto.timeoutMs,
      maxAttempts: dto.maxAttempts,
      retryDelaysMs: dto.retryDelaysMs === undefined ? undefined : (dto.retryDelaysMs ?? []),
    });
    return { created, type: toEventTypeView(row) };
  }

  async listEventTypes(apiKeyId: string, limit: number, after?: string): Promise<EventTypePageDto> {
    const { rows, nextCursor } = pageOf(await this.types.listEventTypes(apiKeyId, limit + 1, after), limit, (r) => r.name);
    return { items: rows.map(toEventTypeView), nextCursor };
  }

  async getEventType(apiKeyId: string, name: string): Promise<EventTypeDto> {
    return toEventTypeView(await this.require(apiKeyId, name));
  }

  async deleteEventType(apiKeyId: string, name: string): Promise<{ name: string; deleted: boolean }> {
    checkName(name);
    if (!(await this.types.deleteEventType(apiKeyId, name))) throw notFound('event type');
    return { name, deleted: true };
  }

  /** The key's type of this name, else 404. */
  async require(apiKeyId: string, name: string): Promise<EventTypeRow> {
    checkName(name);
    const row = await this.types.findEventType(apiKeyId, name);
    if (!row) throw notFound('event type');
    return row;
  }

  /** A schema must be an object within MAX_SCHEMA_BYTES that compiles (in a payload check thread, within EVENT_CHECK_BUDGET_MS). */
  private async checkSchema(schema: unknown): Promise<void> {
    if (typeof schema !== 'object' || Array.isArray(schema)) {
      throw new AppError('validation_failed', 'schema must be a JSON Schema object (null removes it)');
    }
    const text = JSON.stringify(schema);
    if (Buffer.byteLength(text) > MAX_SCHEMA_BYTES) {
      throw new AppError('payload_too_large', `schema must be at most ${MAX_SCHEMA_BYTES} bytes as JSON`);
    }
    const textProblem = unstorableTextProblem('schema', schema);
    if (textProblem) throw new AppError('validation_failed', textProblem);
    await this.checks.compile(text);
  }
}

function checkName(name: unknown): void {
  const problem = typeNameProblem(name);
  if (problem) throw new AppError('validation_failed', problem);
}
