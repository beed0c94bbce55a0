import { Injectable } from '@nestjs/common';
import { ApiDatabase } from '../database/api-database.js';
import { PrismaService } from '../database/prisma.service.js';
import type { Reader } from '../database/read-replica.js';
import { Prisma } from '../generated/prisma/client.js';
import { BREAKER, type BreakerStateName, OUTCOME, STATUS, UNFINISHED } from '../model/states.js';

/** A host row as the API and the dispatcher's cache read it. */
export interface HostRow {
  host: string;
  maxInFlight: number | null;
  ratePerSec: number | null;
  inFlight: number;
  breakerState: BreakerStateName;
  consecutiveFailures: number;
  openedAt: Date | null;
  openUntil: Date | null;
  limitsUpdatedAt: Date | null;
}

/** Per host: attempts of one key since a time, for GET /v1/hosts. */
export interface HostStatsRow {
  host: string;
  count: number;
  failed: number;
  p50: number | null;
  p90: number | null;
  p99: number | null;
}

export interface GoneEndpointRow {
  url: string;
  host: string;
  statusCode: number;
  goneAt: Date;
}

/** A page of a host listing: names after `after` (exclusive), at most `limit`. */
export interface HostPage {
  after?: string;
  limit: number;
}

/** `host` past the page's cursor (true on the first page). */
const after = (page: HostPage) => (page.after === undefined ? Prisma.sql`true` : Prisma.sql`host > ${page.after}`);

const HOST_FIELDS = {
  host: true,
  maxInFlight: true,
  ratePerSec: true,
  inFlight: true,
  breakerState: true,
  consecutiveFailures: true,
  openedAt: true,
  openUntil: true,
  limitsUpdatedAt: true,
} as const;

@Injectable()
export class HostRepository {
  /** The primary, where a read goes unless given a replica's reader (ReadReplica). */
  private readonly primary: Reader;

  constructor(
    private readonly prisma: PrismaService,
    private readonly db: ApiDatabase,
  ) {
    this.primary = { prisma, db };
  }

  findHosts(hosts: string[], reader = this.primary): Promise<HostRow[]> {
    return reader.prisma.host.findMany({
      where: { host: { in: hosts } },
      select: HOST_FIELDS,
      orderBy: { host: 'asc' },
    }) as Promise<HostRow[]>;
  }

  /** Forgets the host's gone URLs: those `apiKeyId` met, or every key's when it is null (admin). */
  deleteGoneEndpoints(host: string, apiKeyId: string | null): Promise<{ count: number }> {
    return this.prisma.goneEndpoint.deleteMany({ where: { host, ...(apiKeyId && { apiKeyId }) } });
  }

  /** Gone URLs of these hosts; only those `apiKeyId` met unless it is null (admin). */
  findGoneEndpoints(hosts: string[], apiKeyId: string | null, reader = this.primary): Promise<GoneEndpointRow[]> {
    return reader.prisma.goneEndpoint.findMany({
      where: { host: { in: hosts }, ...(apiKeyId && { apiKeyId }) },
      select: { url: true, host: true, statusCode: true, goneAt: true },
      orderBy: { goneAt: 'asc' },
    });
  }

  /**
   * Sets a host's limit overrides (null clears one), creating its row if no
   * callback went there yet. Setting a rate fills its bucket (one second's worth).
   */
  async upsertLimits(host: string, limits: { maxInFlight?: number | null; ratePerSec?: number | null }, byKeyId: string): Promise<void> {
    const now = new Date();
    const bucket = limits.ratePerSec !== undefined ? { tokens: limits.ratePerSec ? Math.max(1, limits.ratePerSec) : 0, tokensAt: now } : {};
    const data = { ...limits, ...bucket, limitsUpdatedAt: now, limitsUpdatedBy: byKeyId };
    await this.prisma.host.upsert({ where: { host }, create: { host, ...data }, update: data });
  }

  /**
   * One page (in name order, after `after`) of the hosts this key has work for:
   * pending or in-flight rows, or attempts since `since`.
   */
  hostsOfKey(apiKeyId: string, since: Date, page: HostPage, reader = this.primary): Promise<string[]> {
    return this.page(
      reader,
      page,
      Prisma.sql`
      SELECT host FROM callback WHERE status IN ${UNFINISHED} AND api_key_id = ${apiKeyId}::uuid
      UNION
      SELECT host FROM attempt WHERE api_key_id = ${apiKeyId}::uuid AND started_at >= ${since}`,
    );
  }

  /**
   * Whether this key has work at `host`, as `hostsOfKey` lists it: pending or in-flight
   * rows, attempts since `since`, or a 410 mark of its own. Each EXISTS stops at its
   * first row; the callback probe reads what `queueDepths` reads for the same key and
   * host (the planner's pick of the key's or the host's pending rows), the attempt probe
   * the key's attempts since `since` (`attempt_api_key_id_started_at_idx`), as
   * `hostStats` does. Reads only, locks nothing.
   */
  async keyHasWork(apiKeyId: string, host: string, since: Date): Promise<boolean> {
    const [row] = await this.db.query<{ found: boolean }>(Prisma.sql`
      SELECT EXISTS (SELECT 1 FROM callback WHERE status IN ${UNFINISHED} AND api_key_id = ${apiKeyId}::uuid AND host = ${host})
          OR EXISTS (SELECT 1 FROM attempt WHERE api_key_id = ${apiKeyId}::uuid AND started_at >= ${since} AND host = ${host})
          OR EXISTS (SELECT 1 FROM gone_endpoint WHERE host = ${host} AND api_key_id = ${apiKeyId}::uuid) AS found`);
    return row.found;
  }

  /**
   * One page of the hosts in use, for admin keys: with calls in flight, a breaker
   * not closed or failing, limits of their own (all via `host_limited_idx`), pending
   * rows of any key, gone URLs, or attempts of `apiKeyId` since `since`. Destinations
   * of the history with none of these are left out (`GET /v1/hosts/:host` still
   * shows any one), so the list follows what is going on, not every host ever called.
   */
  hostsInUse(apiKeyId: string, since: Date, page: HostPage, reader = this.primary): Promise<string[]> {
    // Hosts with pending rows, by a loose scan of `callback_pending_host_idx`: one
    // probe per host after the cursor, at most a page of them, whatever the backlogs.
    const pending = Prisma.sql`
      WITH RECURSIVE pending (host, n) AS (
        (SELECT host, 1 FROM callback WHERE status = ${STATUS.pending} AND ${after(page)} ORDER BY host LIMIT 1)
        UNION ALL
        SELECT (SELECT c.host FROM callback c WHERE c.status = ${STATUS.pending} AND c.host > p.host ORDER BY c.host LIMIT 1), p.n + 1
        FROM pending p WHERE p.host IS NOT NULL AND p.n < ${page.limit}
      )`;
    return this.page(
      reader,
      page,
      Prisma.sql`
      SELECT host FROM host
      WHERE in_flight > 0 OR breaker_state <> ${BREAKER.closed} OR consecutive_failures > 0
         OR max_in_flight IS NOT NULL OR rate_per_sec IS NOT NULL
      UNION
      SELECT host FROM pending WHERE host IS NOT NULL
      UNION
      SELECT host FROM gone_endpoint
      UNION
      SELECT host FROM attempt WHERE api_key_id = ${apiKeyId}::uuid AND started_at >= ${since}`,
      pending,
    );
  }

  /** The page of `names` (a query of `host` values, `with` its CTEs) in name order. */
  private async page(reader: Reader, page: HostPage, names: Prisma.Sql, withClause = Prisma.empty): Promise<string[]> {
    const rows = await reader.db.query<{ host: string }>(Prisma.sql`
      ${withClause}
      SELECT host FROM (${names}) h WHERE ${after(page)} ORDER BY host LIMIT ${page.limit}`);
    return rows.map((r) => r.host);
  }

  /** Due pending callbacks of these hosts (of one key, or all when null). Served by `callback_due_idx`. */
  async queueDepths(apiKeyId: string | null, hosts: string[], reader = this.primary): Promise<Map<string, number>> {
    const rows = await reader.db.query<{ host: string; n: number }>(Prisma.sql`
      SELECT host, count(*)::int AS n FROM callback
      WHERE status = ${STATUS.pending} AND next_attempt_at <= now() AND host = ANY(${hosts}::text[])
        AND (${apiKeyId}::uuid IS NULL OR api_key_id = ${apiKeyId}::uuid)
      GROUP BY host`);
    return new Map(rows.map((r) => [r.host, r.n]));
  }

  /** Latency percentiles and failures of one key's attempts to these hosts since `since` (`attempt_api_key_id_started_at_idx`). */
  hostStats(apiKeyId: string, since: Date, hosts: string[], reader = this.primary): Promise<HostStatsRow[]> {
    return reader.db.query<HostStatsRow>(Prisma.sql`
      SELECT host, count(*)::int AS count, (count(*) FILTER (WHERE outcome <> ${OUTCOME.success}))::int AS failed,
             percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50,
             percentile_cont(0.9) WITHIN GROUP (ORDER BY duration_ms) AS p90,
             percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms) AS p99
      FROM attempt WHERE api_key_id = ${apiKeyId}::uuid AND started_at >= ${since} AND host = ANY(${hosts}::text[])
      GROUP BY host`);
  }
}
