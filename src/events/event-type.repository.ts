import { Injectable } from '@nestjs/common';
import { ApiDatabase } from '../database/api-database.js';
import { PrismaService } from '../database/prisma.service.js';
import { Prisma, type EventType } from '../generated/prisma/client.js';

export type EventTypeRow = EventType;

/** What a PUT writes: undefined leaves a column as it is (on an update), null clears it. */
export interface EventTypeSettings {
  description?: string | null;
  schema?: unknown;
  deprecated?: boolean;
  /** Its deliveries' settings, below the receiver's own (null: not set). */
  timeoutMs?: number | null;
  maxAttempts?: number | null;
  retryDelaysMs?: number[];
}

@Injectable()
export class EventTypeRepository {
  constructor(
    private readonly prisma: PrismaService,
    private readonly db: ApiDatabase,
  ) {}

  findEventType(apiKeyId: string, name: string): Promise<EventTypeRow | null> {
    return this.prisma.eventType.findUnique({ where: { apiKeyId_name: { apiKeyId, name } } });
  }

  /** A page in name order after `after` (event_type_pkey). */
  listEventTypes(apiKeyId: string, limit: number, after?: string): Promise<EventTypeRow[]> {
    return this.prisma.eventType.findMany({
      where: { apiKeyId, ...(after !== undefined && { name: { gt: after } }) },
      orderBy: { name: 'asc' },
      take: limit,
    });
  }

  /**
   * Creates or updates the type in one statement (`created`: it was new, told by
   * `xmax = 0` of the row returned: an inserted row has no deleting transaction).
   * On an update a setting left undefined keeps its value. Two PUTs of one name at
   * once: the second waits for the first's commit on event_type_pkey, then updates.
   */
  async upsertEventType(apiKeyId: string, name: string, s: EventTypeSettings): Promise<{ row: EventTypeRow; created: boolean }> {
    const keep = (column: string, given: boolean) => Prisma.raw(given ? `EXCLUDED.${column}` : `event_type.${column}`);
    const schema = s.schema === undefined || s.schema === null ? null : JSON.stringify(s.schema);
    const [r] = await this.db.query<EventTypeRow & { created: boolean }>(Prisma.sql`
      INSERT INTO event_type (api_key_id, name, description, schema, deprecated, timeout_ms, max_attempts, retry_delays_ms)
      VALUES (${apiKeyId}::uuid, ${name}, ${s.description ?? null}, ${schema}::jsonb, ${s.deprecated ?? false},
              ${s.timeoutMs ?? null}::int, ${s.maxAttempts ?? null}::int, ${s.retryDelaysMs?.length ? s.retryDelaysMs : null}::int[])
      ON CONFLICT (api_key_id, name) DO UPDATE SET
        description = ${keep('description', s.description !== undefined)},
        schema = ${keep('schema', s.schema !== undefined)},
        deprecated = ${keep('deprecated', s.deprecated !== undefined)},
        timeout_ms = ${keep('timeout_ms', s.timeoutMs !== undefined)},
        max_attempts = ${keep('max_attempts', s.maxAttempts !== undefined)},
        retry_delays_ms = ${keep('retry_delays_ms', s.retryDelaysMs !== undefined)},
        updated_at = now()
      RETURNING api_key_id AS "apiKeyId", name, description, schema, deprecated, created_at AS "createdAt",
                updated_at AS "updatedAt", timeout_ms AS "timeoutMs", max_attempts AS "maxAttempts",
                retry_delays_ms AS "retryDelaysMs", xmax = 0 AS created`);
    const { created, ...row } = r;
    return { row, created };
  }

  /** Deletes it; false when there was none. Events already published keep their type's name. */
  async deleteEventType(apiKeyId: string, name: string): Promise<boolean> {
    const { count } = await this.prisma.eventType.deleteMany({ where: { apiKeyId, name } });
    return count > 0;
  }
}
