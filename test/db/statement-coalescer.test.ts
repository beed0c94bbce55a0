import { describe, expect, it } from 'vitest';
import { StatementCoalescer } from '../../src/database/statement.coalescer.js';
import { useTestDatabase } from '../support/database.js';

describe(StatementCoalescer.name, () => {
  const test = useTestDatabase();

  /** 100 / x for each input, in one statement; x = 0 fails the whole statement (division by zero). */
  const divider = (groups: number[][]) => async (xs: number[]) => {
    groups.push(xs);
    const { rows } = await test.db.query('SELECT 100 / x AS q FROM unnest($1::int[]) WITH ORDINALITY AS u(x, i) ORDER BY i', [xs]);
    return rows.map((r) => r.q as number);
  };

  it('should answer requests made in the same turn with one statement, each caller its own row', async () => {
    const groups: number[][] = [];
    const coalescer = new StatementCoalescer(divider(groups), { maxInFlight: 2, maxWeight: 100 });
    const answers = await Promise.all([1, 2, 4, 5].map((x) => coalescer.submit(x)));
    expect(answers).toEqual([100, 50, 25, 20]);
    expect(groups).toEqual([[1, 2, 4, 5]]);
  });

  it('should queue requests while maxInFlight statements run and send them together next', async () => {
    const groups: number[][] = [];
    const coalescer = new StatementCoalescer(divider(groups), { maxInFlight: 1, maxWeight: 100 });
    const first = coalescer.submit(1);
    await new Promise((r) => setImmediate(r)); // the first statement is on its way
    const rest = [2, 4, 5].map((x) => coalescer.submit(x));
    expect(await Promise.all([first, ...rest])).toEqual([100, 50, 25, 20]);
    expect(groups).toEqual([[1], [2, 4, 5]]);
  });

  it('should split groups at maxWeight, and still send an input heavier than that alone', async () => {
    const groups: number[][] = [];
    const coalescer = new StatementCoalescer(divider(groups), { maxInFlight: 1, maxWeight: 10, weight: (x) => x });
    expect(await Promise.all([4, 5, 2, 20, 1].map((x) => coalescer.submit(x)))).toEqual([25, 20, 50, 5, 100]);
    expect(groups).toEqual([[4, 5], [2], [20], [1]]);
  });

  it('should fail only the input at fault when a group fails: the others are answered by a statement of their own', async () => {
    const groups: number[][] = [];
    const coalescer = new StatementCoalescer(divider(groups), { maxInFlight: 2, maxWeight: 100 });
    const results = await Promise.allSettled([1, 0, 4].map((x) => coalescer.submit(x)));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[0] as PromiseFulfilledResult<number>).value).toBe(100);
    expect((results[2] as PromiseFulfilledResult<number>).value).toBe(25);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/division by zero/);
    expect(groups).toEqual([[1, 0, 4], [1], [0], [4]]);
  });
});
