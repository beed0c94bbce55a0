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
  tunnelMs: number | null;
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
    const col = <K extends keyof RecordedOutcome>(k: K) => rows.map((r) => r[k]);
    const json = (k: 'responseHeaders') => rows.map((r) => (r[k] ? JSON.stringify(r[k]) : null));
    // One typed array per column: Postgres reads them several times faster than the
    // same rows as one JSON document (jsonb_to_recordset: 3 ms against 0.4 for 200 rows).
    const landed = await this.db.query<{ id: string }>(Prisma.sql`
      WITH o AS (
        SELECT * FROM unnest(
          ${col('callbackId')}::uuid[], ${col('apiKeyId')}::uuid[], ${col('host')}::text[], ${col('number')}::int[],
          ${col('status')}::text[], ${col('nextAttemptAt')}::timestamptz[], ${col('completedAt')}::timestamptz[],
          ${col('startedAt')}::timestamptz[], ${col('durationMs')}::float8[], ${col('dnsMs')}::float8[],
          ${col('connectMs')}::float8[], ${col('tlsMs')}::float8[], ${col('tunnelMs')}::float8[], ${col('firstByteMs')}::float8[],
          ${col('statusCode')}::int[], ${col('outcome')}::text[], ${col('error')}::text[],
          ${json('responseHeaders')}::jsonb[], ${col('responseBody')}::text[]
        ) AS o(callback_id, api_key_id, host, number, status, next_attempt_at, completed_at, started_at,
               duration_ms, dns_ms, connect_ms, tls_ms, tunnel_ms, first_byte_ms, status_code, outcome, error,
               response_headers, response_body)
      ), moved AS (
        UPDATE callback c
        SET status = o.status, attempts = o.number,
            next_attempt_at = COALESCE(o.next_attempt_at, c.next_attempt_at),
            completed_at = o.completed_at, last_status_code = o.status_code, last_error = o.error,
            lease_owner = NULL, lease_expires_at = NULL
        FROM o
        WHERE c.id = o.callback_id AND c.lease_owner = ${owner}
        RETURNING c.id
      )
      INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, dns_ms, connect_ms,
                           tls_ms, tunnel_ms, first_byte_ms, status_code, outcome, error, response_headers, response_body, worker)
      SELECT o.callback_id, o.api_key_id, o.host, o.number, o.started_at, o.duration_ms, o.dns_ms, o.connect_ms,
             o.tls_ms, o.tunnel_ms, o.first_byte_ms, o.status_code, o.outcome, o.error, o.response_headers, o.response_body, ${owner}
      FROM o JOIN moved ON moved.id = o.callback_id
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
