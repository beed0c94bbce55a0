import { describe, expect, it } from 'vitest';
import { HostQueues } from './host.queues.js';

type Row = { id: string; host: string; priority: number; apiKeyId?: string };
const row = (id: string, host: string, priority = 1, apiKeyId?: string): Row => ({ id, host, priority, apiKeyId });

describe(HostQueues.name, () => {
  it("should hand out a host's higher priorities first, then in arrival order", () => {
    const q = new HostQueues<Row>(() => 10);
    for (const r of [row('n1', 'a'), row('l1', 'a', 2), row('n2', 'a'), row('h1', 'a', 0), row('h2', 'a', 0), row('l2', 'a', 2)]) q.push(r);
    const order: string[] = [];
    for (let r = q.take(); r; r = q.take()) order.push(r.id);
    expect(order).toEqual(['h1', 'h2', 'n1', 'n2', 'l1', 'l2']);
  });

  it("should take a key's high items first across its hosts, then go on round-robin", () => {
    const q = new HostQueues<Row>((host) => (host === 'd' ? 0 : 10));
    for (const r of [row('a1', 'a'), row('b1', 'b'), row('c1', 'c'), row('d-high', 'd', 0), row('c-high', 'c', 0), row('a2', 'a')]) q.push(r);
    // d's high item waits for its host (no room); c's goes at once, ahead of a1 and b1.
    expect([q.take()?.id, q.take()?.id, q.take()?.id, q.take()?.id, q.take()?.id]).toEqual(['c-high', 'a1', 'b1', 'c1', 'a2']);
    expect(q.take()).toBeUndefined();
    expect(q.queuedFor('d')).toBe(1);
  });

  it('should go round-robin over hosts below their cap', () => {
    const q = new HostQueues<Row>((host) => (host === 'a' ? 1 : 10));
    for (const r of [row('a1', 'a'), row('a2', 'a'), row('b1', 'b'), row('b2', 'b')]) q.push(r);
    expect([q.take()?.id, q.take()?.id, q.take()?.id, q.take()?.id]).toEqual(['a1', 'b1', 'b2', undefined]);
    q.done('a');
    expect(q.take()?.id).toBe('a2');
    expect(q.inFlightTotal).toBe(3);
  });

  it("should give each key its turn, so a key with a few callbacks is not queued behind another's hundreds", () => {
    const q = new HostQueues<Row>(() => 1000);
    for (let i = 0; i < 300; i++) q.push(row(`a${i}`, `a-host-${i % 100}`, 1, 'A'));
    for (let i = 0; i < 3; i++) q.push(row(`b${i}`, 'b-host', 1, 'B'));
    const first = Array.from({ length: 6 }, () => q.take()!.id);
    expect(first.filter((id) => id.startsWith('b'))).toEqual(['b0', 'b1', 'b2']);
    expect(q.queuedFor('b-host')).toBe(0);
    expect(q.queued).toBe(297);
  });

  it('should hand back every item that waited since before a time, wherever it stands in its queue', () => {
    const q = new HostQueues<Row>(() => 10);
    q.push(row('old-low', 'a', 2), 100);
    q.push(row('new-high', 'a', 0), 500);
    q.push(row('old-b', 'b'), 100);
    expect(
      q
        .removeWaiting(200)
        .map((r) => r.id)
        .sort(),
    ).toEqual(['old-b', 'old-low']);
    expect(q.queued).toBe(1);
    expect(q.take()?.id).toBe('new-high');
    expect(q.take()).toBeUndefined();
  });

  it('should name the keys and hosts holding items below a priority, and yield those of one host, the lowest first', () => {
    const q = new HostQueues<Row>(() => 10);
    for (const r of [row('n1', 'a', 1, 'A'), row('l1', 'a', 2, 'A'), row('l2', 'a', 2, 'B'), row('n2', 'b', 1, 'B'), row('h1', 'c', 0, 'C')]) q.push(r);
    expect(q.waitingBelow(0)).toEqual({ keys: ['A', 'B'], hosts: ['a', 'b'], lowest: 2 });
    expect(q.waitingBelow(1)).toEqual({ keys: ['A', 'B'], hosts: ['a'], lowest: 2 });
    expect(q.waitingBelow(2)).toEqual({ keys: [], hosts: [], lowest: 2 });

    expect(
      q
        .yieldTo('a', 0, 2)
        .map((r) => r.id)
        .sort(),
    ).toEqual(['l1', 'l2']); // not n1, of a higher priority
    expect(q.queuedFor('a')).toBe(1);
    expect(q.yieldTo('a', 1, 5)).toEqual([]); // n1 is not below normal
    expect(q.yieldTo('b', 0, 5).map((r) => r.id)).toEqual(['n2']);
    expect(q.queued).toBe(2);
    expect(q.waitingBelow(0)).toEqual({ keys: ['A'], hosts: ['a'], lowest: 1 });
    const left: string[] = [];
    for (let r = q.take(); r; r = q.take()) left.push(r.id);
    expect(left.sort()).toEqual(['h1', 'n1']);
  });
});
