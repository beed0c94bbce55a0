import { describe, expect, it } from 'vitest';
import { SettleQueue } from './settle.queue.js';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('SettleQueue', () => {
  it('should settle nothing inside the caller, then one slice per turn, in order', async () => {
    const queue = new SettleQueue(4);
    const settled: number[] = [];
    for (let i = 0; i < 10; i++) queue.push(() => settled.push(i));
    expect(settled).toEqual([]);
    await nextTurn();
    expect(settled).toEqual([0, 1, 2, 3]);
    await nextTurn();
    expect(settled).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    await nextTurn();
    expect(settled).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('should yield the event loop between slices', async () => {
    const queue = new SettleQueue(1);
    const order: string[] = [];
    queue.push(() => {
      order.push('slice 1');
      setImmediate(() => order.push('other work'));
    });
    queue.push(() => order.push('slice 2'));
    for (let turn = 0; turn < 3; turn++) await nextTurn();
    expect(order).toEqual(['slice 1', 'other work', 'slice 2']);
  });

  it('should accept more work after it ran dry, and under steady load', async () => {
    const queue = new SettleQueue(8);
    let settled = 0;
    for (let round = 0; round < 300; round++) {
      for (let i = 0; i < 10; i++) queue.push(() => settled++);
      await nextTurn();
    }
    for (let turn = 0; turn < 400 && settled < 3000; turn++) await nextTurn();
    expect(settled).toBe(3000);
  });
});
