import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app.config.js';
import { firstLine } from '../database/database.errors.js';
import { readMigrations } from '../database/migrator.js';
import { ReadReplica, type ReplicaState } from '../database/read-replica.js';
import { withinMs } from '../common/within-ms.js';
import { WorkerStatus } from '../worker-status/worker-status.service.js';
import { HealthRepository } from './health.repository.js';

export interface Check {
  ok: boolean;
  detail?: string;
}

/** A readiness probe must answer promptly: a database slower than this counts as unreachable. */
const DATABASE_CHECK_MS = 2000;

/** How long the worker may go without a database round trip of its own (claim, maintenance) before it is not ready. */
const WORKER_STALE_FACTOR = 5;

@Injectable()
export class HealthService {
  private readonly expected = readMigrations().map((m) => m.name);

  constructor(
    private readonly repo: HealthRepository,
    private readonly worker: WorkerStatus,
    private readonly config: AppConfig,
    private readonly reads: ReadReplica,
  ) {}

  /** The read replica's state (DATABASE_READ_URL), or undefined without one. */
  replica(): ReplicaState | undefined {
    return this.reads.state();
  }

  async checks(): Promise<Record<string, Check>> {
    const checks: Record<string, Check> = {};
    try {
      const applied = new Set(await withinMs(this.repo.appliedMigrations(), DATABASE_CHECK_MS));
      checks.database = { ok: true };
      const missing = this.expected.filter((m) => !applied.has(m));
      checks.migrations = missing.length ? { ok: false, detail: `not applied: ${missing.join(', ')}` } : { ok: true };
    } catch (error) {
      checks.database = { ok: false, detail: firstLine(error) };
    }
    if (this.config.role !== 'api') {
      const age = Date.now() - this.worker.lastHealthyAt;
      const ok = age < this.config.dispatchPollMs * WORKER_STALE_FACTOR + 1000;
      checks.worker = ok ? { ok } : { ok, detail: `no successful claim or maintenance step for ${Math.round(age / 1000)} s` };
    }
    return checks;
  }
}
