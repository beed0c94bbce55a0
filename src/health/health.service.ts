import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app.config.js';
import { readMigrations } from '../database/migrator.js';
import { DispatcherService } from '../dispatch/dispatcher.service.js';
import { HealthRepository } from './health.repository.js';

export interface Check {
  ok: boolean;
  detail?: string;
}

/** How long the worker loop may go without a successful claim before it is not ready. */
const WORKER_STALE_FACTOR = 5;

@Injectable()
export class HealthService {
  private readonly expected = readMigrations().map((m) => m.name);

  constructor(
    private readonly repo: HealthRepository,
    private readonly dispatcher: DispatcherService,
    private readonly config: AppConfig,
  ) {}

  async checks(): Promise<Record<string, Check>> {
    const checks: Record<string, Check> = {};
    try {
      const applied = new Set(await this.repo.appliedMigrations());
      checks.database = { ok: true };
      const missing = this.expected.filter((m) => !applied.has(m));
      checks.migrations = missing.length ? { ok: false, detail: `not applied: ${missing.join(', ')}` } : { ok: true };
    } catch (error) {
      checks.database = { ok: false, detail: (error as Error).message.split('\n')[0] };
    }
    if (this.config.role !== 'api') {
      const age = Date.now() - this.dispatcher.lastHealthyAt;
      const ok = age < this.config.dispatchPollMs * WORKER_STALE_FACTOR + 1000;
      checks.worker = ok ? { ok } : { ok, detail: `no successful claim for ${Math.round(age / 1000)} s` };
    }
    return checks;
  }
}
