import { Injectable } from '@nestjs/common';
import { PrismaService } from '../database/prisma.service.js';

/** A callback this worker holds a lease on, with everything needed to send it. */
export interface ClaimedCallback {
  id: string;
  batchId: string;
  apiKeyId: string;
  url: string;
  host: string;
  method: string;
  headers: Record<string, string>;
  body: string | null;
  timeoutMs: number;
  maxAttempts: number;
  retryDelaysMs: number[] | null;
  /** Attempts finished before this one; this attempt is number `attempts + 1`. */
  attempts: number;
}

@Injectable()
export class ClaimRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * Takes up to `limit` due callbacks in one statement and leases them to `owner`.
   *
   * Locks: `FOR UPDATE SKIP LOCKED` on the chosen rows only, so concurrent workers
   * each take disjoint rows and never wait on each other. Served by the partial index
   * `callback_due_idx (next_attempt_at) WHERE status = 'pending'`, which holds only
   * unfinished rows. The lease (callback timeout + margin) bounds how long a crashed
   * worker can keep rows from being sent. Hosts in `skipHosts` are at their in-flight
   * cap here and would only wait in memory while their lease ticks.
   */
  claimDue(owner: string, limit: number, leaseMarginMs: number, skipHosts: string[]): Promise<ClaimedCallback[]> {
    return this.prisma.$queryRaw<ClaimedCallback[]>`
      WITH due AS (
        SELECT id FROM callback
        WHERE status = 'pending' AND next_attempt_at <= now() AND host <> ALL(${skipHosts}::text[])
        ORDER BY next_attempt_at
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      )
      UPDATE callback c
      SET status = 'in_flight',
          lease_owner = ${owner},
          lease_expires_at = now() + (c.timeout_ms + ${leaseMarginMs}::int) * interval '1 millisecond'
      FROM due
      WHERE c.id = due.id
      RETURNING c.id, c.batch_id AS "batchId", c.api_key_id AS "apiKeyId", c.url, c.host, c.method,
                c.headers, c.body, c.timeout_ms AS "timeoutMs", c.max_attempts AS "maxAttempts",
                c.retry_delays_ms AS "retryDelaysMs", c.attempts`;
  }

  /**
   * Hands leased rows back untouched (shutdown, or rows that waited too long in
   * memory). Only rows still leased to `owner` move: a lease that already expired
   * and was taken by another worker stays theirs.
   */
  async releaseClaims(owner: string, ids: string[]): Promise<number> {
    if (ids.length === 0) return 0;
    return this.prisma.$executeRaw`
      UPDATE callback SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL
      WHERE id = ANY(${ids}::uuid[]) AND status = 'in_flight' AND lease_owner = ${owner}`;
  }

  /**
   * Makes rows of crashed workers claimable again: in-flight rows whose lease ran
   * out go back to pending, due now. Served by `callback_lease_idx` (in-flight rows
   * only). The call that was in flight at the crash may have reached the receiver;
   * it is sent again with the same webhook-id (at-least-once).
   */
  reapExpiredLeases(): Promise<number> {
    return this.prisma.$executeRaw`
      UPDATE callback SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL, next_attempt_at = now()
      WHERE status = 'in_flight' AND lease_expires_at < now()`;
  }

  /** When the next pending callback falls due, to sleep exactly until then. */
  async nextDueAt(): Promise<Date | undefined> {
    const rows = await this.prisma.$queryRaw<Array<{ at: Date | null }>>`
      SELECT min(next_attempt_at) AS at FROM callback WHERE status = 'pending'`;
    return rows[0]?.at ?? undefined;
  }
}
