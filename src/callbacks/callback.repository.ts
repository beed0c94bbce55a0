import { Injectable } from '@nestjs/common';
import { ApiDatabase } from '../database/api-database.js';
import { DUE_CHANNEL } from '../database/notify.listener.js';
import { PrismaService } from '../database/prisma.service.js';
import { StatementCoalescer } from '../database/statement.coalescer.js';
import { Prisma, type Attempt, type Callback } from '../generated/prisma/client.js';
import type { CallbackStatus } from './callback.status.js';

export interface CallbackFilter {
  batchId?: string;
  status?: CallbackStatus;
  host?: string;
  since?: Date;
  /** Id of the last row of the previous page. */
  after?: string;
  limit: number;
}

/** Status-read statements running at once; reads arriving meanwhile share the next one. */
const READS_IN_FLIGHT = 2;
/** Callbacks one status-read statement looks up at most. */
const READ_MAX_ROWS = 200;

/** An attempt as the status API shows it; `startedAt` as Postgres writes a timestamptz in JSON (ISO-8601, microseconds). */
export type AttemptRow = Pick<Attempt,
  'number' | 'durationMs' | 'dnsMs' | 'connectMs' | 'tlsMs' | 'tunnelMs' | 'firstByteMs' | 'statusCode' | 'outcome' |
  'error' | 'responseHeaders' | 'responseBody'> & { startedAt: string };
/** The columns of a callback the status API shows (not its headers, body or lease). */
export type CallbackStatusRow = Pick<Callback,
  'id' | 'batchId' | 'externalId' | 'url' | 'host' | 'method' | 'status' | 'attempts' | 'maxAttempts' | 'timeoutMs' |
  'nextAttemptAt' | 'lastStatusCode' | 'lastError' | 'createdAt' | 'completedAt'>;
export type CallbackWithAttempts = CallbackStatusRow & { attemptRows: AttemptRow[] };

@Injectable()
export class CallbackRepository {
  private readonly reads = new StatementCoalescer((keys: Array<{ apiKeyId: string; id: string }>) => this.findCallbacks(keys), {
    maxInFlight: READS_IN_FLIGHT,
    maxWeight: READ_MAX_ROWS,
  });

  constructor(
    private readonly prisma: PrismaService,
    private readonly db: ApiDatabase,
  ) {}

  /**
   * One callback of this key with all its attempts. Concurrent reads share one
   * statement (see StatementCoalescer): each read is a primary-key lookup, and the
   * statement around it (round trip, parse, plan, wake-ups) cost more than the
   * lookup itself.
   */
  findCallback(apiKeyId: string, id: string): Promise<CallbackWithAttempts | null> {
    return this.reads.submit({ apiKeyId, id });
  }

  /**
   * Callbacks by (key, id) with all their attempts, in one statement: primary key
   * (`callback_pkey`, the key id checked on the row: another key's callback is not
   * found), then `attempt_callback_id_number_idx` for the attempts, folded into one
   * JSON column. Only the columns the status API shows: a body may be 256 KiB. Raw
   * SQL because the status read is a hot path: the same read through `findFirst` +
   * `include` cost ~8 ms of CPU per call in the query engine; and run past Prisma
   * (ApiDatabase), which took another ~0.4 ms per statement. Answers
   * per input in order, null where there is no such callback; the rows are pg's own
   * objects (with their ordinal `i`), not copies. Reads, locks nothing.
   */
  private async findCallbacks(keys: Array<{ apiKeyId: string; id: string }>): Promise<Array<CallbackWithAttempts | null>> {
    const rows = await this.db.query<CallbackWithAttempts & { i: string }>(Prisma.sql`
      SELECT r.i, c.id, c.batch_id AS "batchId", c.external_id AS "externalId", c.url, c.host, c.method,
             c.timeout_ms AS "timeoutMs", c.max_attempts AS "maxAttempts", c.status, c.attempts,
             c.next_attempt_at AS "nextAttemptAt", c.last_status_code AS "lastStatusCode", c.last_error AS "lastError",
             c.created_at AS "createdAt", c.completed_at AS "completedAt",
             COALESCE((
               SELECT json_agg(json_build_object(
                        'number', a.number, 'startedAt', a.started_at, 'durationMs', a.duration_ms, 'dnsMs', a.dns_ms,
                        'connectMs', a.connect_ms, 'tlsMs', a.tls_ms, 'tunnelMs', a.tunnel_ms, 'firstByteMs', a.first_byte_ms,
                        'statusCode', a.status_code, 'outcome', a.outcome, 'error', a.error,
                        'responseHeaders', a.response_headers, 'responseBody', a.response_body) ORDER BY a.number)
               FROM attempt a WHERE a.callback_id = c.id), '[]') AS "attemptRows"
      FROM unnest(${keys.map((k) => k.id)}::uuid[], ${keys.map((k) => k.apiKeyId)}::uuid[]) WITH ORDINALITY AS r(id, api_key_id, i)
      JOIN callback c ON c.id = r.id AND c.api_key_id = r.api_key_id`);
    const found: Array<CallbackWithAttempts | null> = keys.map(() => null);
    for (const row of rows) found[Number(row.i) - 1] = row;
    return found;
  }

  /**
   * A page in id (= creation) order. With batchId it is served by the batch index;
   * failed or cancelled by callback_unsuccessful_idx; pending by the due index; in
   * flight by the lease index, which the planner takes only when told that a lease is
   * held (as the CHECK callback_lease_in_flight_check makes every in-flight row),
   * else it scanned the whole table (177 ms with a million finished rows).
   */
  listCallbacks(apiKeyId: string, f: CallbackFilter) {
    return this.prisma.callback.findMany({
      where: {
        apiKeyId,
        ...(f.batchId && { batchId: f.batchId }),
        ...(f.status && { status: f.status }),
        ...(f.status === 'in_flight' && { leaseExpiresAt: { not: null } }),
        ...(f.host && { host: f.host }),
        ...(f.since && { createdAt: { gte: f.since } }),
        ...(f.after && { id: { gt: f.after } }),
      },
      orderBy: { id: 'asc' },
      take: f.limit,
    });
  }

  /** Every attempt of a batch, for its timeline. */
  batchAttempts(batchId: string) {
    return this.prisma.$queryRaw<Array<{
      callbackId: string; url: string; externalId: string | null; number: number; startedAt: Date; durationMs: number;
      statusCode: number | null; outcome: string; dnsMs: number | null; connectMs: number | null; tlsMs: number | null; firstByteMs: number | null;
    }>>`
      SELECT c.id AS "callbackId", c.url, c.external_id AS "externalId", a.number, a.started_at AS "startedAt",
             a.duration_ms AS "durationMs", a.status_code AS "statusCode", a.outcome, a.dns_ms AS "dnsMs",
             a.connect_ms AS "connectMs", a.tls_ms AS "tlsMs", a.first_byte_ms AS "firstByteMs"
      FROM callback c JOIN attempt a ON a.callback_id = c.id
      WHERE c.batch_id = ${batchId}::uuid
      ORDER BY c.id, a.number`;
  }

  /**
   * Cancels unfinished callbacks. A row in flight is taken from its worker: the
   * lease is cleared, so that worker's write-back will not land.
   */
  cancelCallbacks(apiKeyId: string, ids: string[]): Promise<Array<{ id: string }>> {
    return this.prisma.$queryRaw`
      UPDATE callback SET status = 'cancelled', completed_at = now(), lease_owner = NULL, lease_expires_at = NULL
      WHERE id = ANY(${ids}::uuid[]) AND api_key_id = ${apiKeyId}::uuid AND status IN ('pending', 'in_flight')
      RETURNING id`;
  }

  /**
   * Sends finished callbacks again: back to pending, due now, with one more attempt
   * allowed. The batch is re-opened and the workers woken, in one transaction.
   */
  retryCallbacks(apiKeyId: string, where: { ids?: string[]; batchId?: string }, statuses: CallbackStatus[]): Promise<number> {
    return this.prisma.$transaction(async (tx) => {
      const rows = await tx.$queryRaw<Array<{ batch_id: string }>>`
        UPDATE callback
        SET status = 'pending', next_attempt_at = now(), completed_at = NULL,
            max_attempts = GREATEST(max_attempts, attempts + 1)
        WHERE api_key_id = ${apiKeyId}::uuid AND status = ANY(${statuses}::text[])
          AND (${where.ids ?? null}::uuid[] IS NULL OR id = ANY(${where.ids ?? null}::uuid[]))
          AND (${where.batchId ?? null}::uuid IS NULL OR batch_id = ${where.batchId ?? null}::uuid)
        RETURNING batch_id`;
      if (rows.length > 0) {
        const batchIds = [...new Set(rows.map((r) => r.batch_id))];
        await tx.$executeRaw`UPDATE batch SET completed_at = NULL WHERE id = ANY(${batchIds}::uuid[])`;
        await tx.$executeRaw`SELECT pg_notify(${DUE_CHANNEL}, '')`;
      }
      return rows.length;
    });
  }

  statusOf(apiKeyId: string, id: string) {
    return this.prisma.callback.findFirst({ where: { id, apiKeyId }, select: { status: true } });
  }
}
