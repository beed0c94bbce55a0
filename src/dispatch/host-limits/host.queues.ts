/**
 * Claimed callbacks waiting in memory for a free slot, one queue per destination
 * (higher priority first, then first come first served), with the count in flight
 * per destination. `take` hands out work round-robin over destinations below their
 * cap, so one busy or slow host cannot fill the window.
 */
export class HostQueues<T extends { host: string; priority?: number }> {
  private readonly queues = new Map<string, Array<{ item: T; since: number }>>();
  private readonly active = new Map<string, number>();
  private ring: string[] = [];
  private cursor = 0;
  private queuedCount = 0;
  private inFlightCount = 0;

  constructor(private readonly capFor: (host: string) => number) {}

  get queued(): number {
    return this.queuedCount;
  }

  /** Items taken and not yet done, over all hosts. */
  get inFlightTotal(): number {
    return this.inFlightCount;
  }

  inFlight(host: string): number {
    return this.active.get(host) ?? 0;
  }

  /** Items of `host` waiting for a slot. */
  queuedFor(host: string): number {
    return this.queues.get(host)?.length ?? 0;
  }

  push(item: T, now = Date.now()): void {
    let q = this.queues.get(item.host);
    if (!q) {
      q = [];
      this.queues.set(item.host, q);
      this.ring.push(item.host);
    }
    // Behind every item of its priority or higher (0 is highest): a short scan from the
    // end, as a host's queue holds at most its cap and most items share one priority.
    let at = q.length;
    const rank = item.priority ?? 0;
    while (at > 0 && (q[at - 1].item.priority ?? 0) > rank) at--;
    q.splice(at, 0, { item, since: now });
    this.queuedCount++;
  }

  /** The next item whose host has a free slot (and counts it in flight), or undefined. */
  take(): T | undefined {
    for (let i = 0; i < this.ring.length; i++) {
      const idx = (this.cursor + i) % this.ring.length;
      const host = this.ring[idx];
      if (this.inFlight(host) >= this.capFor(host)) continue;
      const q = this.queues.get(host)!;
      const { item } = q.shift()!;
      this.queuedCount--;
      this.inFlightCount++;
      this.active.set(host, this.inFlight(host) + 1);
      if (q.length === 0) this.dropHost(host, idx);
      else this.cursor = (idx + 1) % this.ring.length;
      return item;
    }
    return undefined;
  }

  /** A call to `host` finished. */
  done(host: string): void {
    const n = this.inFlight(host) - 1;
    this.inFlightCount--;
    if (n > 0) this.active.set(host, n);
    else this.active.delete(host);
  }

  /** Hosts with no room for more claimed work: in flight plus waiting reaches the cap. */
  fullHosts(): string[] {
    const hosts = new Set<string>();
    for (const [host, n] of this.active) if (n + (this.queues.get(host)?.length ?? 0) >= this.capFor(host)) hosts.add(host);
    for (const [host, q] of this.queues) if (q.length + this.inFlight(host) >= this.capFor(host)) hosts.add(host);
    return [...hosts];
  }

  /** Removes and returns waiting items queued before `before` (or all). */
  removeWaiting(before = Number.POSITIVE_INFINITY): T[] {
    const out: T[] = [];
    for (const host of [...this.ring]) {
      const q = this.queues.get(host)!;
      const kept = q.filter((w) => (w.since < before ? (out.push(w.item), false) : true));
      if (kept.length === q.length) continue;
      if (kept.length === 0) this.dropHost(host, this.ring.indexOf(host));
      else this.queues.set(host, kept);
    }
    this.queuedCount -= out.length;
    return out;
  }

  private dropHost(host: string, idx: number): void {
    this.queues.delete(host);
    this.ring.splice(idx, 1);
    if (this.cursor > idx) this.cursor--;
    if (this.cursor >= this.ring.length) this.cursor = 0;
  }
}
