import { Injectable } from '@nestjs/common';
import type { CallbackStatus, Outcome } from '../callbacks/callback.status.js';
import { DispatchDatabase } from '../database/dispatch-database.js';
import { Prisma } from '../generated/prisma/client.js';

/** One finished attempt and the callback state it leads to. */
export interface RecordedOutcome {
  callbackId: string;
  apiKeyId: string;
  host: string;
  number: number;
  status: CallbackStatus;
  nextAttemptAt: Date | null;
  completedAt: Date | null;
  startedAt: Date;
  durationMs: number;
  dnsMs: number | null;
  connectMs: number | null;
  tlsMs: number | null;
  firstByteMs: number | null;
  statusCode: number | null;
  outcome: Outcome;
  error: string | null;
  responseHeaders: Record<string, string> | null;
  responseBody: string | null;
}

@Injectable()
export class OutcomeRepository {
  constructor(private readonly db: DispatchDatabase) {}

  /**
   * Writes many outcomes in one statement: callback rows move to their next state
   * and their attempts are inserted. The UPDATE only matches rows still leased to
   * `owner` (a row holds a lease exactly while it is in flight: constraint
   * `callback_lease_in_flight_check`), and only attempts of rows it matched are
   * inserted, so a write-back from a worker that lost its lease (expired, or the
   * callback was cancelled meanwhile) lands nothing. The status is deliberately not
   * named: rows are found by primary key, never through an index on `status`,
   * whose stale statistics would make the planner scan every in-flight row.
   * Returns the callback ids that landed.
   */
  async recordOutcomes(owner: string, rows: RecordedOutcome[]): Promise<string[]> {
    if (rows.length === 0) return [];
    // One JSON parameter instead of a typed array per column: the driver would
    // otherwise inspect and escape every element of 18 arrays per write-back.
    const landed = await this.db.query<{ id: string }>(Prisma.sql`
      WITH o AS (
        SELECT * FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS o(
          "callbackId" uuid, "apiKeyId" uuid, host text, number int, status text, "nextAttemptAt" timestamptz,
          "completedAt" timestamptz, "startedAt" timestamptz, "durationMs" float8, "dnsMs" float8, "connectMs" float8,
          "tlsMs" float8, "firstByteMs" float8, "statusCode" int, outcome text, error text, "responseHeaders" jsonb,
          "responseBody" text)
      ), moved AS (
        UPDATE callback c
        SET status = o.status, attempts = o.number,
            next_attempt_at = COALESCE(o."nextAttemptAt", c.next_attempt_at),
            completed_at = o."completedAt", last_status_code = o."statusCode", last_error = o.error,
            lease_owner = NULL, lease_expires_at = NULL
        FROM o
        WHERE c.id = o."callbackId" AND c.lease_owner = ${owner}
        RETURNING c.id
      )
      INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, dns_ms, connect_ms,
                           tls_ms, first_byte_ms, status_code, outcome, error, response_headers, response_body, worker)
      SELECT o."callbackId", o."apiKeyId", o.host, o.number, o."startedAt", o."durationMs", o."dnsMs", o."connectMs",
             o."tlsMs", o."firstByteMs", o."statusCode", o.outcome, o.error, o."responseHeaders", o."responseBody", ${owner}
      FROM o JOIN moved ON moved.id = o."callbackId"
      RETURNING callback_id AS id`);
    return landed.map((r) => r.id);
  }

  /**
   * Stamps `completed_at` on the given batches that have nothing left to send and
   * returns them. Run after the write-back committed: of two workers finishing the
   * last callbacks of one batch at once, the later one to commit sees both done.
   * Served by `callback_batch_id_status_idx`.
   */
  completeBatches(batchIds: string[]): Promise<Array<{ id: string; completedAt: Date }>> {
    if (batchIds.length === 0) return Promise.resolve([]);
    return this.db.query(Prisma.sql`
      UPDATE batch b
      SET completed_at = (SELECT max(c.completed_at) FROM callback c WHERE c.batch_id = b.id)
      WHERE b.id = ANY(${batchIds}::uuid[]) AND b.completed_at IS NULL
        AND NOT EXISTS (SELECT 1 FROM callback c WHERE c.batch_id = b.id AND c.status IN ('pending', 'in_flight'))
      RETURNING b.id, b.completed_at AS "completedAt"`);
  }

  /** Completion sweep for batches whose last write-back crashed before stamping them. */
  async openBatchesWithNothingLeft(limit: number): Promise<string[]> {
    const rows = await this.db.query<{ id: string }>(Prisma.sql`
      SELECT b.id FROM batch b
      WHERE b.completed_at IS NULL
        AND NOT EXISTS (SELECT 1 FROM callback c WHERE c.batch_id = b.id AND c.status IN ('pending', 'in_flight'))
      ORDER BY b.created_at
      LIMIT ${limit}`);
    return rows.map((r) => r.id);
  }
}
