import type { AxiosAdapter } from 'axios';
import type { Agent } from 'undici';
import type { ClientTls } from './connector.js';
import { undiciAdapter } from './undici.adapter.js';

/** A receiver's own connections: the key of its credentials' version, and what they present and trust. */
export interface ConnectionCredentials extends ClientTls {
  /** `<receiver id> <credentials version>`: a change of the credentials opens new connections. */
  poolKey: string;
}

/** A pool unused this long is closed (its connections idled out long before: keepAliveTimeout). */
const IDLE_MS = 5 * 60_000;
/** How often idle pools are looked for. */
const SWEEP_MS = 60_000;

interface Pool {
  agent: Agent;
  adapter: AxiosAdapter;
  usedAt: number;
}

/**
 * One undici Agent per receiver credentials (mutual TLS) and network reach (public
 * only, or with the ranges ALLOW_PRIVATE_NETWORKS opens: the call's `privateNetworks`),
 * each with its own connector carrying that receiver's client certificate, key and CA
 * and checking addresses by that reach, so a connection made with one receiver's
 * certificate is never used for another receiver, nor for a callback without one, nor
 * for a call that may not reach where it goes. Made on a receiver's first call, reused by every later one
 * (a lookup by key on the send path); a change of its credentials is a new key, and
 * the old pool closes once idle. At most `max` pools: past it the least recently
 * used one is closed (its calls in flight finish first).
 */
export class AgentPools {
  private readonly pools = new Map<string, Pool>();
  private readonly sweep: NodeJS.Timeout;

  constructor(
    private readonly makeAgent: (tls: ClientTls, privateNetworks: boolean) => Agent,
    private readonly max: number,
  ) {
    this.sweep = setInterval(() => this.closeIdle(Date.now() - IDLE_MS), SWEEP_MS).unref();
  }

  get size(): number {
    return this.pools.size;
  }

  /** The adapter sending through the pool of these credentials and reach, made on first use. */
  adapterFor(tls: ConnectionCredentials, privateNetworks = false): AxiosAdapter {
    const now = Date.now();
    const key = privateNetworks ? `${tls.poolKey} private` : tls.poolKey;
    let pool = this.pools.get(key);
    if (!pool) {
      if (this.pools.size >= this.max) this.closeLeastUsed();
      const agent = this.makeAgent(tls, privateNetworks);
      pool = { agent, adapter: undiciAdapter(agent), usedAt: now };
      this.pools.set(key, pool);
    }
    pool.usedAt = now;
    return pool.adapter;
  }

  /** Cuts every pool off (shutdown: calls still running were handed back). */
  async destroy(): Promise<void> {
    clearInterval(this.sweep);
    const all = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(all.map((p) => p.agent.destroy().catch(() => undefined)));
  }

  private closeIdle(before: number): void {
    for (const [key, pool] of this.pools) if (pool.usedAt < before) this.close(key, pool);
  }

  private closeLeastUsed(): void {
    let oldest: [string, Pool] | undefined;
    for (const entry of this.pools) if (!oldest || entry[1].usedAt < oldest[1].usedAt) oldest = entry;
    if (oldest) this.close(...oldest);
  }

  private close(key: string, pool: Pool): void {
    this.pools.delete(key);
    void pool.agent.close().catch(() => undefined); // lets its calls in flight finish; nothing to report
  }
}
