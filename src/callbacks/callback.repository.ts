import { Injectable } from '@nestjs/common';
import { DUE_CHANNEL } from '../database/notify.listener.js';
import { PrismaService } from '../database/prisma.service.js';
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

const ATTEMPT_FIELDS = {
  number: true, startedAt: true, durationMs: true, dnsMs: true, connectMs: true, tlsMs: true, firstByteMs: true,
  statusCode: true, outcome: true, error: true, responseHeaders: true, responseBody: true,
} as const;

@Injectable()
export class CallbackRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** One callback of this key with all its attempts (primary key, then `attempt_callback_id_number_idx`). */
  findCallback(apiKeyId: string, id: string) {
    return this.prisma.callback.findFirst({
      where: { id, apiKeyId },
      include: { attemptRows: { select: ATTEMPT_FIELDS, orderBy: { number: 'asc' } } },
    });
  }

  /** A page in id (= creation) order; with batchId served by the batch index, else by (api_key_id, created_at). */
  listCallbacks(apiKeyId: string, f: CallbackFilter) {
    return this.prisma.callback.findMany({
      where: {
        apiKeyId,
        ...(f.batchId && { batchId: f.batchId }),
        ...(f.status && { status: f.status }),
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
