import { afterEach, describe, expect, it } from 'vitest';
import { AppError } from '../common/app.error.js';
import { loadConfig } from '../config/app.config.js';
import { PayloadCheckPool } from './payload-check.pool.js';

/** 12,000 distinct objects (~140 KB): under `uniqueItems`, ajv compares every pair, ~72 million comparisons. */
const MANY_OBJECTS = JSON.stringify(Array.from({ length: 12_000 }, (_, i) => ({ a: i })));
const UNIQUE = JSON.stringify({ type: 'array', uniqueItems: true });

/** The most the event loop was late by, sampled every 5 ms while `work` runs. */
async function loopLag<T>(work: Promise<T>): Promise<{ lag: number; outcome: PromiseSettledResult<T> }> {
  let lag = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    lag = Math.max(lag, now - last - 5);
    last = now;
  }, 5);
  const [outcome] = await Promise.allSettled([work]);
  clearInterval(timer);
  return { lag, outcome };
}

describe(PayloadCheckPool.name, () => {
  let pool: PayloadCheckPool | undefined;
  const make = (eventCheckBudgetMs: number, eventCheckThreads = 1) => (pool = new PayloadCheckPool(loadConfig({}, { eventCheckBudgetMs, eventCheckThreads })));
  afterEach(async () => {
    await pool?.onModuleDestroy();
    pool = undefined;
  });

  it('should make no thread before the first check, one for checks one at a time, and more only while checks wait', async () => {
    const p = make(5000, 2);
    await new Promise((r) => setTimeout(r, 50));
    expect(p.threadCount).toBe(0);
    const schema = JSON.stringify({ type: 'object' });
    for (let i = 0; i < 3; i++) await p.problemOf(schema, '{}', 't');
    expect(p.threadCount).toBe(1);
    await Promise.all([
      p.problemOf(UNIQUE, JSON.stringify(Array.from({ length: 2_000 }, (_, i) => ({ a: i }))), 't'),
      p.problemOf(schema, '{}', 't'),
      p.problemOf(schema, '{}', 't'),
    ]);
    expect(p.threadCount).toBe(2);
  });

  it('should compile, validate and filter in its threads, and answer a schema that does not compile as a 400', async () => {
    const p = make(5000);
    const schema = JSON.stringify({ type: 'object', properties: { amount: { type: 'number' } } });
    await p.compile(schema);
    expect(await p.problemOf(schema, '{"amount":1}', 't')).toBeUndefined();
    expect(await p.problemOf(schema, '{"amount":"x"}', 't')).toEqual({ path: '/amount', message: 'must be number' });
    expect(await p.matching([{ amount: { $gt: 5 } }, { amount: 1 }, {}], '{"amount":7}')).toEqual([true, false, true]);
    for (const bad of [{ type: 'nonsense' }, { type: 'string', pattern: '^(?=a)a$' }]) {
      const error = await p.compile(JSON.stringify(bad)).catch((e: unknown) => e);
      expect(error, JSON.stringify(bad)).toBeInstanceOf(AppError);
      expect((error as AppError).status).toBe(400);
    }
  });

  it('should refuse a check that outruns its budget with a 400 near the budget, the event loop free meanwhile, and go on with a new thread', async () => {
    const p = make(300);
    await p.compile(UNIQUE); // the thread is up
    const started = performance.now();
    const { lag, outcome } = await loopLag(p.problemOf(UNIQUE, MANY_OBJECTS, 'many'));
    const took = performance.now() - started;
    expect(outcome.status).toBe('rejected');
    const error = (outcome as PromiseRejectedResult).reason as AppError;
    expect(error).toBeInstanceOf(AppError);
    expect([error.status, error.code]).toEqual([400, 'validation_failed']);
    expect(error.message).toMatch(/could not be checked against the schema of many within 300 ms \(EVENT_CHECK_BUDGET_MS\)/);
    expect(took).toBeGreaterThanOrEqual(300);
    expect(took).toBeLessThan(1500);
    expect(lag).toBeLessThan(100);
    // the next check runs on a new thread
    expect(await p.problemOf(UNIQUE, '[{"a":1},{"a":1}]', 'many')).toMatchObject({ message: expect.stringMatching(/duplicate items/) });
  });

  it('should validate a costly schema on a small payload within the budget', async () => {
    const p = make(5000);
    expect(await p.problemOf(UNIQUE, JSON.stringify(Array.from({ length: 200 }, (_, i) => ({ a: i }))), 'few')).toBeUndefined();
  });
});
