import { Injectable } from '@nestjs/common';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { AppError } from '../common/app.error.js';
import { pageOf } from '../common/page.js';
import { AppConfig } from '../config/app.config.js';
import { ReadReplica, type Reader } from '../database/read-replica.js';
import type { ClearedGoneDto, HostDto, HostPageDto } from './dto/host.dto.js';
import type { HostLimitsDto } from './dto/host-limits.dto.js';
import { HostRepository, type GoneEndpointRow, type HostPage, type HostRow, type HostStatsRow } from './host.repository.js';
import { errorRate } from './host.policy.js';

/** Window of the latency figures when `since` is not given. */
const DEFAULT_WINDOW_MS = 15 * 60_000;

/**
 * Per-destination limits and state for GET/PUT /v1/hosts. Limits, in-flight
 * count and breaker are the host's (shared by every tenant); latency, error rate,
 * queue depth and gone URLs are the calling key's own, except that an admin key
 * sees every host and every gone URL. A plain key sees only the hosts it has work
 * for: any other is a 404 worded as for a host nobody uses, so the answer does not
 * tell whether another tenant sends there.
 */
@Injectable()
export class HostService {
  constructor(
    private readonly config: AppConfig,
    private readonly hosts: HostRepository,
    private readonly reads: ReadReplica,
  ) {}

  /** One page of hosts in name order, read on the replica when it serves the key (ReadReplica); `nextCursor` is its last one when more follow. */
  listHosts(key: AuthenticatedKey, page: HostPage, since = new Date(Date.now() - DEFAULT_WINDOW_MS)): Promise<HostPageDto> {
    return this.reads.read(key.id, async (reader) => {
      const deeper = { ...page, limit: page.limit + 1 };
      const read = key.isAdmin ? await this.hosts.hostsInUse(key.id, since, deeper, reader) : await this.hosts.hostsOfKey(key.id, since, deeper, reader);
      const { rows: names, nextCursor } = pageOf(read, page.limit, (name) => name);
      const rows = names.length > 0 ? await this.hosts.findHosts(names, reader) : [];
      return { since: since.toISOString(), items: await this.describe(rows, key, since, reader), nextCursor };
    });
  }

  async getHost(key: AuthenticatedKey, host: string, since = new Date(Date.now() - DEFAULT_WINDOW_MS)): Promise<HostDto> {
    const [row, visible] = await Promise.all([this.hosts.findHosts([host]).then((rows) => rows[0]), key.isAdmin || this.hosts.keyHasWork(key.id, host, since)]);
    if (!row || !visible) throw new AppError('not_found', `no callbacks or limits for ${host} yet`);
    const [item] = await this.describe([row], key, since);
    return item;
  }

  /** Admin keys only (the controller says so): a host's limits bind every tenant. */
  async setLimits(key: AuthenticatedKey, host: string, dto: HostLimitsDto): Promise<HostDto> {
    if (dto.maxInFlight === undefined && dto.ratePerSec === undefined) {
      throw new AppError('validation_failed', 'give maxInFlight and/or ratePerSec (null restores the default)');
    }
    await this.hosts.upsertLimits(host, { maxInFlight: dto.maxInFlight, ratePerSec: dto.ratePerSec }, key.id);
    return this.getHost(key, host);
  }

  /** 410 marks are per key: a key clears its own, an admin key every key's. */
  async clearGone(key: AuthenticatedKey, host: string): Promise<ClearedGoneDto> {
    const { count } = await this.hosts.deleteGoneEndpoints(host, key.isAdmin ? null : key.id);
    return { host, cleared: count };
  }

  private async describe(rows: HostRow[], key: AuthenticatedKey, since: Date, reader?: Reader): Promise<HostDto[]> {
    if (rows.length === 0) return [];
    const names = rows.map((r) => r.host);
    const [stats, depths, gone] = await Promise.all([
      this.hosts.hostStats(key.id, since, names, reader),
      this.hosts.queueDepths(key.isAdmin ? null : key.id, names, reader),
      this.hosts.findGoneEndpoints(names, key.isAdmin ? null : key.id, reader),
    ]);
    const statsBy = new Map(stats.map((s) => [s.host, s]));
    return rows.map((r) =>
      this.view(
        r,
        statsBy.get(r.host),
        depths.get(r.host) ?? 0,
        gone.filter((g) => g.host === r.host),
      ),
    );
  }

  private view(r: HostRow, s: HostStatsRow | undefined, queueDepth: number, gone: GoneEndpointRow[]): HostDto {
    const round = (v: number | null | undefined) => (v === null || v === undefined ? null : Math.round(v * 10) / 10);
    return {
      host: r.host,
      limits: {
        maxInFlight: r.maxInFlight ?? this.config.hostMaxInFlight,
        maxInFlightIsDefault: r.maxInFlight === null,
        ratePerSec: r.ratePerSec,
        updatedAt: r.limitsUpdatedAt?.toISOString() ?? null,
      },
      inFlight: r.inFlight,
      queueDepth,
      breaker: {
        state: r.breakerState,
        consecutiveFailures: r.consecutiveFailures,
        openedAt: r.openedAt?.toISOString() ?? null,
        openUntil: r.openUntil?.toISOString() ?? null,
      },
      latency: {
        attempts: s?.count ?? 0,
        p50Ms: round(s?.p50),
        p90Ms: round(s?.p90),
        p99Ms: round(s?.p99),
        errorRate: errorRate(s?.count ?? 0, s?.failed ?? 0),
      },
      goneEndpoints: gone.map((g) => ({ url: g.url, statusCode: g.statusCode, goneAt: g.goneAt.toISOString() })),
    };
  }
}
