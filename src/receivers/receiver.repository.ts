import { Injectable } from '@nestjs/common';
import { UNFINISHED } from '../model/states.js';
import { AppConfig } from '../config/app.config.js';
import { ApiDatabase } from '../database/api-database.js';
import type { SqlRunner } from '../database/pg.statements.js';
import { PrismaService } from '../database/prisma.service.js';
import type { Reader } from '../database/read-replica.js';
import { Prisma, type Receiver } from '../generated/prisma/client.js';
import { uuidv7 } from '../common/uuid.js';
import { toggledReceivers } from '../queue/operator-causes.sql.js';
import { insertTask, supersedeReceiverTasks } from '../tasks/task.repository.js';
import { disabledColumns } from '../queue/receiver-hold.sql.js';
import { listReceiversWithHealth, type ReceiverHealthRow, type ReceiverListArgs } from './receiver-list.sql.js';

export type ReceiverRow = Receiver;

/** The settings a PUT writes; undefined leaves a column as it is. */
export interface ReceiverSettings {
  url?: string | null;
  description?: string | null;
  headers?: Record<string, string>;
  timeoutMs?: number | null;
  maxAttempts?: number | null;
  retryDelaysMs?: number[];
  /** its subscriptions (event-type.policy.ts), and its filter on their payloads (null: none) */
  eventTypes?: string[];
  eventFilter?: Record<string, unknown> | null;
  /** its transform's source (src/transforms); null removes it */
  transformCode?: string | null;
  /** destinations a portal session set its URL or token URL to: added to `portal_hosts` (its calls there go to public addresses only) */
  portalHosts?: string[];
}

export interface ReceiverFigures {
  pending: number;
  inFlight: number;
  held: number;
  outcomes: Record<string, number>;
  attempts: number;
  p50: number | null;
  p90: number | null;
  p99: number | null;
}

const RETURNING = Prisma.sql`RETURNING id, api_key_id AS "apiKeyId", name, url, description, headers, timeout_ms AS "timeoutMs",
  max_attempts AS "maxAttempts", retry_delays_ms AS "retryDelaysMs", disabled, disabled_reason AS "disabledReason",
  disabled_at AS "disabledAt", failing_since AS "failingSince", last_failure_at AS "lastFailureAt",
  created_at AS "createdAt", updated_at AS "updatedAt", event_types AS "eventTypes", event_filter AS "eventFilter",
  transform_code AS "transformCode"`;

@Injectable()
export class ReceiverRepository {
  /** The primary, where a read goes unless given a replica's reader (ReadReplica). */
  private readonly primary: Reader;

  constructor(
    private readonly prisma: PrismaService,
    private readonly db: ApiDatabase,
    private readonly config: AppConfig,
  ) {
    this.primary = { prisma, db };
  }

  findReceiver(apiKeyId: string, name: string): Promise<ReceiverRow | null> {
    return this.prisma.receiver.findUnique({ where: { apiKeyId_name: { apiKeyId, name } } });
  }

  /** The key's receivers of these names (the ingest resolves a batch's names in one read). */
  findReceivers(apiKeyId: string, names: string[]): Promise<ReceiverRow[]> {
    return this.prisma.receiver.findMany({ where: { apiKeyId, name: { in: names } } });
  }

  /** A page of the key's receivers in `sort` order, after the cursor, each with its health (one statement: receiver-list.sql.ts). */
  listReceivers(args: ReceiverListArgs, reader = this.primary): Promise<Array<ReceiverRow & ReceiverHealthRow>> {
    return reader.db.query<ReceiverRow & ReceiverHealthRow>(listReceiversWithHealth(args));
  }

  /**
   * Inserts the receiver with its first secret (sealed: SigningSecretService.sealNew), in one transaction; null when the key
   * already has a receiver of that name (ON CONFLICT on receiver_api_key_id_name_key:
   * a concurrent PUT of the same name waits for the first to commit, then updates).
   */
  insertReceiver(
    row: { id: string; apiKeyId: string; name: string; disabled: boolean } & ReceiverSettings,
    secret: { id: string; keyId: string; sealed: string },
    also?: (tx: SqlRunner, receiverId: string) => Promise<void>,
  ): Promise<ReceiverRow | null> {
    return this.db.transaction(async (tx) => {
      const [created] = await tx.query<ReceiverRow>(Prisma.sql`
        INSERT INTO receiver (id, api_key_id, name, url, description, headers, timeout_ms, max_attempts, retry_delays_ms,
                              disabled, disabled_reason, disabled_at, event_types, event_filter, transform_code, portal_hosts)
        VALUES (${row.id}::uuid, ${row.apiKeyId}::uuid, ${row.name}, ${row.url ?? null}, ${row.description ?? null},
                ${JSON.stringify(row.headers ?? {})}::jsonb, ${row.timeoutMs ?? null}::int, ${row.maxAttempts ?? null}::int,
                ${row.retryDelaysMs ?? null}::int[], ${row.disabled},
                ${row.disabled ? 'disabled through the API' : null}, ${row.disabled ? new Date() : null}::timestamptz,
                ${row.eventTypes ?? []}::text[], ${row.eventFilter ? JSON.stringify(row.eventFilter) : null}::jsonb, ${row.transformCode ?? null},
                ${row.portalHosts ?? []}::text[])
        ON CONFLICT (api_key_id, name) DO NOTHING
        ${RETURNING}`);
      if (!created) return null;
      await tx.execute(Prisma.sql`
        INSERT INTO signing_secret (id, api_key_id, receiver_id, key_id, secret)
        VALUES (${secret.id}::uuid, ${row.apiKeyId}::uuid, ${row.id}::uuid, ${secret.keyId}, ${secret.sealed})`);
      await also?.(tx, created.id);
      return created;
    });
  }

  /**
   * Updates settings and, when `disabled` is given and differs, flips it and starts
   * the task that holds or releases the receiver's unfinished callbacks
   * (`receiver.disable` / `receiver.enable`, task.sql.ts), in one transaction; a task
   * of the receiver still running is superseded. Locks the receiver row first (the
   * ingest reads it `FOR SHARE`, so a batch stored meanwhile is held or not as the
   * receiver is when it commits). The flag applies to the claim at once (it passes
   * over rows of disabled receivers the task has not reached yet). Enabling also
   * clears the failure record the auto-disable reads. The flip's operator event
   * (receiver.disabled / receiver.enabled) is stored in the same transaction. Null
   * when there is no such receiver.
   */
  updateReceiver(
    apiKeyId: string,
    name: string,
    s: ReceiverSettings & { disabled?: boolean; reason?: string },
    also?: (tx: SqlRunner, receiverId: string) => Promise<void>,
  ): Promise<{ row: ReceiverRow; taskId: string | null } | null> {
    return this.db.transaction(async (tx) => {
      const [before] = await tx.query<{ id: string; disabled: boolean }>(Prisma.sql`
        SELECT id, disabled FROM receiver WHERE api_key_id = ${apiKeyId}::uuid AND name = ${name} FOR UPDATE`);
      if (!before) return null;
      const toggle = s.disabled !== undefined && s.disabled !== before.disabled;
      const set = (column: string, value: unknown, cast = '') =>
        value === undefined ? Prisma.empty : Prisma.sql`${Prisma.raw(column)} = ${value}${Prisma.raw(cast)},`;
      const [row] = await tx.query<ReceiverRow>(Prisma.sql`
        UPDATE receiver SET
          ${set('url', s.url)} ${set('description', s.description)}
          ${set('headers', s.headers === undefined ? undefined : JSON.stringify(s.headers), '::jsonb')}
          ${set('timeout_ms', s.timeoutMs, '::int')} ${set('max_attempts', s.maxAttempts, '::int')}
          ${set('retry_delays_ms', s.retryDelaysMs, '::int[]')}
          ${set('event_types', s.eventTypes, '::text[]')}
          ${set('event_filter', s.eventFilter === undefined ? undefined : s.eventFilter && JSON.stringify(s.eventFilter), '::jsonb')}
          ${set('transform_code', s.transformCode)}
          ${s.portalHosts === undefined ? Prisma.empty : Prisma.sql`portal_hosts = portal_hosts || ARRAY(SELECT h FROM unnest(${s.portalHosts}::text[]) h WHERE h <> ALL(portal_hosts)),`}
          ${toggle ? disabledColumns(s.disabled!, s.reason ?? 'disabled through the API') : Prisma.empty}
          updated_at = now()
        WHERE id = ${before.id}::uuid
        ${RETURNING}`);
      await also?.(tx, before.id);
      if (!toggle) return { row, taskId: null };
      const taskId = uuidv7();
      await tx.execute(supersedeReceiverTasks(before.id));
      await tx.execute(insertTask({ id: taskId, apiKeyId, kind: s.disabled ? 'receiver.disable' : 'receiver.enable', receiverId: before.id }));
      // its receiver.disabled / receiver.enabled operator event, with the flip (src/operator-events)
      await tx.query(toggledReceivers([before.id], s.disabled!, false, { timeoutMs: this.config.httpTimeoutMs, maxAttempts: this.config.defaultMaxAttempts }));
      return { row, taskId };
    });
  }

  /**
   * Deletes the receiver, in one transaction: its row is renamed out of the way (its
   * name is free again at once), marked deleted and disabled (the claim passes over
   * its callbacks from now on; the ingest refuses it), its running task superseded,
   * and a `receiver.delete` task started, which cancels its unfinished callbacks and
   * detaches the finished ones chunk by chunk, then deletes the row (its secrets go
   * with it). Returns the receiver's id and the task's, or null.
   */
  deleteReceiver(apiKeyId: string, name: string): Promise<{ id: string; taskId: string } | null> {
    return this.db.transaction(async (tx) => {
      const [r] = await tx.query<{ id: string }>(Prisma.sql`
        SELECT id FROM receiver WHERE api_key_id = ${apiKeyId}::uuid AND name = ${name} FOR UPDATE`);
      if (!r) return null;
      // '/' is never in a receiver's name (receiverNameProblem): the name is free for a new receiver at once
      await tx.execute(Prisma.sql`
        UPDATE receiver SET name = '/deleted/' || id::text, deleted_at = now(), ${disabledColumns(true, 'deleted')} updated_at = now()
        WHERE id = ${r.id}::uuid`);
      const taskId = uuidv7();
      await tx.execute(supersedeReceiverTasks(r.id));
      await tx.execute(insertTask({ id: taskId, apiKeyId, kind: 'receiver.delete', receiverId: r.id }));
      return { id: r.id, taskId };
    });
  }

  /**
   * Whether a call of the receiver to `destination` may go to the ranges
   * ALLOW_PRIVATE_NETWORKS opens, by the rule the claim applies (claim.sql.ts `moved`):
   * its key is granted them and a portal session did not choose that destination. One
   * receiver_pkey and one api_key_pkey probe.
   */
  async privateNetworksOf(receiverId: string, destination: string): Promise<boolean> {
    const [row] = await this.db.query<{ granted: boolean }>(Prisma.sql`
      SELECT k.allow_private_networks AND NOT (${destination}::text = ANY(rv.portal_hosts)) AS granted
      FROM receiver rv JOIN api_key k ON k.id = rv.api_key_id
      WHERE rv.id = ${receiverId}::uuid`);
    return row?.granted ?? false;
  }

  /**
   * Its callbacks waiting, in flight and held (through `callback_receiver_idx`), and
   * its attempts since `since` by outcome with exact percentiles (through
   * `attempt_receiver_idx`, index-only once vacuumed). Reads, locks nothing.
   */
  async figures(receiverId: string, since: Date): Promise<ReceiverFigures> {
    const [counts, outcomes, pct] = await Promise.all([
      this.db.query<{ status: string; held: boolean; n: number }>(Prisma.sql`
        SELECT status, held, count(*)::int AS n FROM callback
        WHERE receiver_id = ${receiverId}::uuid AND status IN ${UNFINISHED} GROUP BY status, held`),
      this.db.query<{ outcome: string; n: number }>(Prisma.sql`
        SELECT outcome, count(*)::int AS n FROM attempt
        WHERE receiver_id = ${receiverId}::uuid AND started_at >= ${since}::timestamptz GROUP BY outcome`),
      this.db.query<{ pct: number[] | null }>(Prisma.sql`
        SELECT percentile_cont(ARRAY[0.5, 0.9, 0.99]::float8[]) WITHIN GROUP (ORDER BY duration_ms) AS pct FROM attempt
        WHERE receiver_id = ${receiverId}::uuid AND started_at >= ${since}::timestamptz`),
    ]);
    const n = (status: string, held: boolean) => counts.find((c) => c.status === status && c.held === held)?.n ?? 0;
    const p = pct[0]?.pct ?? null;
    return {
      pending: n('pending', false),
      inFlight: n('in_flight', false) + n('in_flight', true),
      held: n('pending', true),
      outcomes: Object.fromEntries(outcomes.map((o) => [o.outcome, o.n])),
      attempts: outcomes.reduce((sum, o) => sum + o.n, 0),
      p50: p?.[0] ?? null,
      p90: p?.[1] ?? null,
      p99: p?.[2] ?? null,
    };
  }
}
