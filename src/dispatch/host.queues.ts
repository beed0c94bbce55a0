interface Waiting<T> {
  item: T;
  since: number;
}

/** One key's waiting items, one queue per destination, and its turn among them. */
interface KeyQueues<T> {
  hosts: Map<string, Array<Waiting<T>>>;
  ring: string[];
  cursor: number;
  /** Its waiting items of a priority above normal (0: high): while there are any, `take` looks for them first. */
  urgent: number;
}

/** Priorities counted in KeyQueues.urgent: above normal (1). */
const isUrgent = (priority: number | undefined) => (priority ?? 0) < 1;

/** An item with no key of its own waits as this one. */
const NO_KEY = '';

/**
 * Claimed callbacks waiting in memory for a free slot: per key, one queue per
 * destination (higher priority first, then first come first served), with the count
 * in flight per destination. `take` goes round-robin over keys, and within a key
 * round-robin over its destinations below their cap (those whose first item is high
 * priority first, while the key has any): a key with a few callbacks is
 * not queued behind another key's hundreds (each key gets its turn of the sending),
 * and one busy or slow host cannot fill the window.
 */
export class HostQueues<T extends { host: string; priority?: number; apiKeyId?: string }> {
  private readonly keys = new Map<string, KeyQueues<T>>();
  private keyRing: string[] = [];
  private keyCursor = 0;
  /** Waiting items per host, over all keys. */
  private readonly waitingByHost = new Map<string, number>();
  private readonly active = new Map<string, number>();
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
    return this.waitingByHost.get(host) ?? 0;
  }

  push(item: T, now = Date.now()): void {
    const keyId = item.apiKeyId ?? NO_KEY;
    let key = this.keys.get(keyId);
    if (!key) {
      key = { hosts: new Map(), ring: [], cursor: 0, urgent: 0 };
      this.keys.set(keyId, key);
      this.keyRing.push(keyId);
    }
    let q = key.hosts.get(item.host);
    if (!q) {
      q = [];
      key.hosts.set(item.host, q);
      key.ring.push(item.host);
    }
    // Behind every item of its priority or higher (0 is highest): a short scan from the
    // end, as a host's queue holds at most its cap and most items share one priority.
    let at = q.length;
    const rank = item.priority ?? 0;
    while (at > 0 && (q[at - 1].item.priority ?? 0) > rank) at--;
    q.splice(at, 0, { item, since: now });
    if (isUrgent(item.priority)) key.urgent++;
    this.addWaiting(item.host, 1);
    this.queuedCount++;
  }

  /** The next item whose host has a free slot (and counts it in flight), or undefined. */
  take(): T | undefined {
    for (let k = 0; k < this.keyRing.length; k++) {
      const keyIdx = (this.keyCursor + k) % this.keyRing.length;
      const keyId = this.keyRing[keyIdx];
      const key = this.keys.get(keyId)!;
      const item = this.takeFrom(key);
      if (!item) continue;
      if (key.ring.length === 0) this.dropKey(keyId, keyIdx);
      else this.keyCursor = (keyIdx + 1) % this.keyRing.length;
      return item;
    }
    return undefined;
  }

  /**
   * The key's next item: round-robin over its hosts below their cap, a host whose
   * first item is urgent (high) first while the key has any (so a high callback goes
   * at the next free place in the window, not after a turn of every host).
   */
  private takeFrom(key: KeyQueues<T>): T | undefined {
    if (key.urgent > 0) {
      const item = this.takeAt(key, (q) => isUrgent(q[0].item.priority));
      if (item) return item;
    }
    return this.takeAt(key, () => true);
  }

  private takeAt(key: KeyQueues<T>, wanted: (q: Array<Waiting<T>>) => boolean): T | undefined {
    for (let i = 0; i < key.ring.length; i++) {
      const idx = (key.cursor + i) % key.ring.length;
      const host = key.ring[idx];
      if (this.inFlight(host) >= this.capFor(host)) continue;
      const q = key.hosts.get(host)!;
      if (!wanted(q)) continue;
      const { item } = q.shift()!;
      if (isUrgent(item.priority)) key.urgent--;
      this.queuedCount--;
      this.inFlightCount++;
      this.addWaiting(host, -1);
      this.active.set(host, this.inFlight(host) + 1);
      if (q.length === 0) dropHost(key, host, idx);
      else key.cursor = (idx + 1) % key.ring.length;
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
    for (const [host, n] of this.active) if (n + this.queuedFor(host) >= this.capFor(host)) hosts.add(host);
    for (const [host, n] of this.waitingByHost) if (n + this.inFlight(host) >= this.capFor(host)) hosts.add(host);
    return [...hosts];
  }

  /**
   * The keys and hosts of the waiting items of a lower priority than `priority` (a
   * larger number), and the lowest priority among them (`priority` when none).
   */
  waitingBelow(priority: number): { keys: string[]; hosts: string[]; lowest: number } {
    const keys = new Set<string>();
    const hosts = new Set<string>();
    let lowest = priority;
    for (const [keyId, key] of this.keys) {
      for (const [host, q] of key.hosts) {
        // A host's queue is in priority order: its last item is its lowest.
        const p = q[q.length - 1].item.priority ?? 0;
        if (p <= priority) continue;
        hosts.add(host);
        if (keyId !== NO_KEY) keys.add(keyId);
        lowest = Math.max(lowest, p);
      }
    }
    return { keys: [...keys], hosts: [...hosts], lowest };
  }

  /**
   * Removes and returns up to `n` waiting items of `host` of a lower priority than
   * `priority` (a larger number), the lowest first, so that items of `priority` can
   * take their places.
   */
  yieldTo(host: string, priority: number, n: number): T[] {
    const out: T[] = [];
    while (out.length < n) {
      let from: KeyQueues<T> | undefined;
      let lowest = priority;
      for (const key of this.keys.values()) {
        const q = key.hosts.get(host);
        const p = q ? (q[q.length - 1].item.priority ?? 0) : -1;
        if (p > lowest) [from, lowest] = [key, p];
      }
      if (!from) break;
      const q = from.hosts.get(host)!;
      const { item } = q.pop()!;
      if (isUrgent(item.priority)) from.urgent--;
      out.push(item);
      if (q.length === 0) dropHost(from, host, from.ring.indexOf(host));
    }
    if (out.length > 0) {
      this.addWaiting(host, -out.length);
      this.queuedCount -= out.length;
      for (const [keyId, key] of [...this.keys]) if (key.ring.length === 0) this.dropKey(keyId, this.keyRing.indexOf(keyId));
    }
    return out;
  }

  /** Removes and returns waiting items queued before `before` (or all). */
  removeWaiting(before = Number.POSITIVE_INFINITY): T[] {
    const out: T[] = [];
    for (const keyId of [...this.keyRing]) {
      const key = this.keys.get(keyId)!;
      for (const host of [...key.ring]) {
        const q = key.hosts.get(host)!;
        const kept = q.filter((w) => {
          if (w.since >= before) return true;
          out.push(w.item);
          if (isUrgent(w.item.priority)) key.urgent--;
          return false;
        });
        if (kept.length === q.length) continue;
        this.addWaiting(host, kept.length - q.length);
        if (kept.length === 0) dropHost(key, host, key.ring.indexOf(host));
        else key.hosts.set(host, kept);
      }
      if (key.ring.length === 0) this.dropKey(keyId, this.keyRing.indexOf(keyId));
    }
    this.queuedCount -= out.length;
    return out;
  }

  private addWaiting(host: string, delta: number): void {
    const n = this.queuedFor(host) + delta;
    if (n > 0) this.waitingByHost.set(host, n);
    else this.waitingByHost.delete(host);
  }

  private dropKey(keyId: string, idx: number): void {
    this.keys.delete(keyId);
    this.keyRing.splice(idx, 1);
    if (this.keyCursor > idx) this.keyCursor--;
    if (this.keyCursor >= this.keyRing.length) this.keyCursor = 0;
  }
}

function dropHost<T>(key: KeyQueues<T>, host: string, idx: number): void {
  key.hosts.delete(host);
  key.ring.splice(idx, 1);
  if (key.cursor > idx) key.cursor--;
  if (key.cursor >= key.ring.length) key.cursor = 0;
}
