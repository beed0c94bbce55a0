import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

export type WorkerState = 'stopped' | 'running' | 'draining';

/** Where this worker's claimed callbacks are right now. */
export interface WorkerWindow {
  /** Calls in flight. */
  inFlight: number;
  /** Claimed, waiting in memory for a host slot or a place in the window. */
  queued: number;
  /** Finished, outcome not yet written back. */
  unwritten: number;
}

/**
 * What this process's worker says about itself, for health and metrics to read
 * without knowing the worker's parts: the worker (src/dispatch) writes it, health
 * and metrics only read it.
 */
@Injectable()
export class WorkerStatus {
  /** This worker's name in leases and attempts: host, pid and a random tag (a restarted pid is another worker). */
  readonly owner = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  state: WorkerState = 'stopped';
  /** Last time the worker finished a database round trip of its own (a claim or a maintenance step), ms since epoch. */
  lastHealthyAt = 0;
  /** Whether this worker holds the maintenance lock (runs the reaper, the batch sweep, retention). */
  leader = false;
  private windowOf: () => WorkerWindow = () => ({ inFlight: 0, queued: 0, unwritten: 0 });

  markHealthy(): void {
    this.lastHealthyAt = Date.now();
  }

  /** The worker tells where to read its window from. */
  reportWindow(read: () => WorkerWindow): void {
    this.windowOf = read;
  }

  get window(): WorkerWindow {
    return this.windowOf();
  }
}
