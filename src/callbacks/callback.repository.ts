import { Injectable } from '@nestjs/common';
import { ApiDatabase, WITHOUT_JIT } from '../database/api-database.js';
import { DueNotifier } from '../database/due.notifier.js';
import { PrismaService } from '../database/prisma.service.js';
import type { Reader } from '../database/read-replica.js';
import { StatementCoalescer } from '../database/statement.coalescer.js';
import { Prisma, type Attempt, type Callback } from '../generated/prisma/client.js';
import { BREAKER, STATUS, UNFINISHED, type CallbackStatus } from '../model/states.js';
import { attemptsSince, batchAttemptRows } from '../queue/batch-attempts.sql.js';
import { idFloorOfStoredSince } from '../common/uuid.js';
import { reopenBatches } from '../queue/batch-completion.sql.js';
import { AppConfig } from '../config/app.config.js';
import { hostRoom } from '../queue/host-room.sql.js';
import { REQUEUE_COLUMNS } from '../queue/requeue.sql.js';

/** Whether the callback's receiver (if any) is disabled, inside an UPDATE of callback. */

export interface CallbackFilter {
  batchId?: string;
  receiverId?: string;
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

/** One attempt of a batch with its callback's url and external id, for the batch's timeline. */
export interface BatchAttemptRow {
  callbackId: string;
  url: string;
  externalId: string | null;
  number: number;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  outcome: string;
  dnsMs: number | null;
  connectMs: number | null;
  tlsMs: number | null;
  firstByteMs: number | null;
}

/** An attempt as the status API shows it; `startedAt` as Postgres writes a timestamptz in JSON (ISO-8601, microseconds). */
export type AttemptRow = Pick<
  Attempt,
  | 'number'
  | 'durationMs'
  | 'dnsMs'
  | 'connectMs'
  | 'tlsMs'
  | 'tunnelMs'
  | 'firstByteMs'
  | 'statusCode'
  | 'outcome'
  | 'error'
  | 'responseHeaders'
  | 'responseBody'
  | 'transformed'
  | 'auth'
  | 'tokenMs'
> & { startedAt: string };
/** The columns of a callback the status API shows (not its headers, body or lease). */
export type CallbackStatusRow = Pick<
  Callback,
  | 'id'
  | 'batchId'
  | 'externalId'
  | 'url'
  | 'host'
  | 'method'
  | 'status'
  | 'attempts'
  | 'maxAttempts'
  | 'timeoutMs'
  | 'nextAttemptAt'
  | 'lastStatusCode'
  | 'lastError'
  | 'createdAt'
  | 'completedAt'
  | 'priority'
  | 'orderingKey'
  | 'held'
> & {
  /** Its receiver's name and why it is disabled, if it has one. */
  receiver: { name: string; disabledReason: string | null } | null;
};
export const STATUS_COLUMNS = {
  id: true,
  batchId: true,
  externalId: true,
  url: true,
  host: true,
  method: true,
  status: true,
  attempts: true,
  maxAttempts: true,
  timeoutMs: true,
  nextAttemptAt: true,
  lastStatusCode: true,
  lastError: true,
  createdAt: true,
  completedAt: true,
  priority: true,
  orderingKey: true,
  held: true,
  receiver: { select: { name: true, disabledReason: true } },
} as const satisfies Record<keyof CallbackStatusRow, unknown>;
/** Raw facts behind a pending callback's wait (callback.policy.ts turns them into a reason). */
export interface WaitingState {
  notDue: boolean;
  dueAt: Date;
  behind: string | null;
  breakerState: string | null;
  openUntil: Date | null;
  slots: number | null;
  tokens: number | null;
  /** Its key's own breaker at the host (host_key_breaker), when it pauses the key now: until then. */
  keyPausedUntil: Date | null;
}
export type CallbackWithAttempts = CallbackStatusRow & { attemptRows: AttemptRow[] };

@Injectable()
export class CallbackRepository {
  private readonly reads = new StatementCoalescer((keys: Array<{ apiKeyId: string; id: string }>) => this.findCallbacks(keys), {
    maxInFlight: READS_IN_FLIGHT,
    maxWeight: READ_MAX_ROWS,
  });

  /** The primary, where a read goes unless given a replica's reader (ReadReplica). */
  private readonly primary: Reader;

  constructor(
    private readonly prisma: PrismaService,
    private readonly db: ApiDatabase,
    private readonly due: DueNotifier,
    private readonly config: AppConfig,
  ) {
    this.primary = { prisma, db };
  }

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
             c.created_at AS "createdAt", c.completed_at AS "completedAt", c.priority, c.ordering_key AS "orderingKey", c.held,
             CASE WHEN c.receiver_id IS NULL THEN NULL
                  ELSE (SELECT json_build_object('name', rv.name, 'disabledReason', rv.disabled_reason)
                        FROM receiver rv WHERE rv.id = c.receiver_id) END AS receiver,
             COALESCE((
               SELECT json_agg(json_build_object(
                        'number', a.number, 'startedAt', a.started_at, 'durationMs', a.duration_ms, 'dnsMs', a.dns_ms,
                        'connectMs', a.connect_ms, 'tlsMs', a.tls_ms, 'tunnelMs', a.tunnel_ms, 'firstByteMs', a.first_byte_ms,
                        'statusCode', a.status_code, 'outcome', a.outcome, 'error', a.error,
                        'responseHeaders', a.response_headers, 'responseBody', a.response_body,
                        'transformed', a.transformed, 'auth', a.auth, 'tokenMs', a.token_ms) ORDER BY a.number)
               FROM attempt a WHERE a.callback_id = c.id), '[]') AS "attemptRows"
      FROM unnest(${keys.map((k) => k.id)}::uuid[], ${keys.map((k) => k.apiKeyId)}::uuid[]) WITH ORDINALITY AS r(id, api_key_id, i)
      JOIN callback c ON c.id = r.id AND c.api_key_id = r.api_key_id`);
    const found: Array<CallbackWithAttempts | null> = keys.map(() => null);
    for (const row of rows) found[Number(row.i) - 1] = row;
    return found;
  }

  /**
   * A page in id (= creation) order. With batchId it is served by the batch index;
   * with receiverId by callback_receiver_idx;
   * failed or cancelled by callback_unsuccessful_idx; pending by the due index; in
   * flight by the lease index, which the planner takes only when told that a lease is
   * held (as the CHECK callback_lease_in_flight_check makes every in-flight row),
   * else it scanned the whole table (177 ms with a million finished rows).
   */
  /** A page of the key's callbacks by id; on `reader` (a read replica, ReadReplica) or the primary. */
  listCallbacks(apiKeyId: string, f: CallbackFilter, reader = this.primary): Promise<CallbackStatusRow[]> {
    return reader.prisma.callback.findMany({
      where: {
        apiKeyId,
        ...(f.batchId && { batchId: f.batchId }),
        ...(f.receiverId && { receiverId: f.receiverId }),
        ...(f.status && { status: f.status }),
        ...(f.status === 'in_flight' && { leaseExpiresAt: { not: null } }),
        ...(f.host && { host: f.host }),
        ...(f.since && { createdAt: { gte: f.since } }),
        // ids are made at acceptance (UUIDv7, the API's clock), a moment before created_at (the server's): the same
        // bound less CLOCK_MARGIN_MS on the id lets each partition's primary key seek to it, where created_at
        // alone left the ordered walk to read every older row of the key first (1.1 s at 3M rows, stock 15)
        ...((f.since || f.after) && {
          id: { ...(f.since && { gte: idFloorOfStoredSince(f.since) }), ...(f.after && { gt: f.after }) },
        }),
      },
      // The columns a list shows: a body may be 256 KiB, and a page 1,000 rows.
      select: STATUS_COLUMNS,
      orderBy: { id: 'asc' },
      take: f.limit,
    });
  }

  /** The batch of the key's event `eventId` (event_api_key_id_event_id_key), or null. */
  async eventBatchId(apiKeyId: string, eventId: string): Promise<string | null> {
    const event = await this.prisma.event.findUnique({ where: { apiKeyId_eventId: { apiKeyId, eventId } }, select: { batchId: true } });
    return event?.batchId ?? null;
  }

  /** Every attempt of a batch stored at `createdAt`, for its timeline: its rows from then on only (batch-attempts.sql.ts), without JIT. */
  batchAttempts(batchId: string, createdAt: Date) {
    return this.db.query<BatchAttemptRow>(batchAttemptRows(Prisma.sql`${batchId}::uuid`, attemptsSince(createdAt)), WITHOUT_JIT);
  }

  /**
   * Cancels unfinished callbacks. A row in flight is taken from its worker: the
   * lease is cleared, so that worker's write-back will not land.
   */
  cancelCallbacks(apiKeyId: string, ids: string[]): Promise<Array<{ id: string }>> {
    return this.db.query(Prisma.sql`
      UPDATE callback SET status = ${STATUS.cancelled}, completed_at = now(), done_at = now(), lease_owner = NULL, lease_expires_at = NULL
      WHERE id = ANY(${ids}::uuid[]) AND api_key_id = ${apiKeyId}::uuid AND status IN ${UNFINISHED}
      RETURNING id`);
  }

  /**
   * Sends these finished callbacks again: back to pending, due now, with one more
   * attempt allowed, and their batches re-opened, in one transaction (a batch's
   * whole retry runs as a task: task.sql.ts). The workers are woken after it
   * committed (DueNotifier: a NOTIFY inside the transaction would queue its commit
   * behind every other notifying commit).
   */
  async retryCallbacks(apiKeyId: string, ids: string[], statuses: CallbackStatus[]): Promise<number> {
    const retried = await this.db.transaction(async (tx) => {
      const rows = await tx.query<{ batch_id: string }>(Prisma.sql`
        UPDATE callback
        SET ${REQUEUE_COLUMNS}
        WHERE api_key_id = ${apiKeyId}::uuid AND status = ANY(${statuses}::text[]) AND id = ANY(${ids}::uuid[])
        RETURNING batch_id`);
      if (rows.length > 0) await tx.execute(reopenBatches([...new Set(rows.map((r) => r.batch_id))]));
      return rows.length;
    });
    if (retried > 0) this.due.notifyDue();
    return retried;
  }

  /**
   * What a pending callback waits for, as read now: its due time, the callback
   * before it of its ordering key (`callback_ordering_idx`), its host's room
   * (hostRoom, as the claim reads it), its key's own breaker at the host (a
   * primary-key probe). One read, no locks.
   */
  async waitingState(apiKeyId: string, id: string): Promise<WaitingState | undefined> {
    const [row] = await this.db.query<WaitingState>(Prisma.sql`
      SELECT c.next_attempt_at > now() AS "notDue", c.next_attempt_at AS "dueAt",
             (SELECT o.id FROM callback o
              WHERE c.ordering_key IS NOT NULL AND o.api_key_id = c.api_key_id AND o.ordering_key = c.ordering_key
                AND o.status IN ${UNFINISHED} AND o.id < c.id
              ORDER BY o.id LIMIT 1) AS "behind",
             h.breaker_state AS "breakerState", h.open_until AS "openUntil", r.slots, r.tokens,
             (SELECT k.open_until FROM host_key_breaker k
              WHERE k.host = c.host AND k.api_key_id = c.api_key_id AND k.state <> ${BREAKER.closed} AND k.open_until > now()) AS "keyPausedUntil"
      FROM callback c
      LEFT JOIN host h ON h.host = c.host
      LEFT JOIN LATERAL (SELECT ${hostRoom(this.config.hostMaxInFlight, Prisma.sql`now()`)}) r ON h.host IS NOT NULL
      WHERE c.id = ${id}::uuid AND c.api_key_id = ${apiKeyId}::uuid AND c.status = ${STATUS.pending}`);
    return row;
  }

  statusOf(apiKeyId: string, id: string) {
    return this.prisma.callback.findFirst({ where: { id, apiKeyId }, select: { status: true } });
  }
}
