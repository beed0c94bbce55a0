import { describe, expect, it } from 'vitest';
import { PayloadSchemaCache } from './payload-schema.cache.js';

const schema = (n: number) => ({ type: 'object', properties: { [`f${n}`]: { type: 'integer' } }, required: [`f${n}`] });

describe(PayloadSchemaCache.name, () => {
  it('should compile a schema once and reuse it while its text is the same', () => {
    const cache = new PayloadSchemaCache();
    const first = cache.validatorOf(schema(1));
    expect(cache.validatorOf(schema(1))).toBe(first);
    expect(cache.size).toBe(1);
    expect(cache.validatorOf(schema(2))).not.toBe(first);
  });

  it('should name the JSON path of the first problem', () => {
    const cache = new PayloadSchemaCache();
    const s = { type: 'object', properties: { order: { type: 'object', properties: { amount: { type: 'number' } } } }, additionalProperties: false };
    expect(cache.problemOf(s, { order: { amount: 1 } })).toBeUndefined();
    expect(cache.problemOf(s, { order: { amount: 'x' } })).toEqual({ path: '/order/amount', message: 'must be number' });
    expect(cache.problemOf(s, { extra: 1 })).toEqual({ path: '', message: 'must NOT have additional properties: extra' });
    expect(cache.problemOf({ type: 'string', format: 'email' }, 'not-an-address')?.message).toMatch(/email/);
  });

  it('should keep at most 500 compiled schemas, the least recently used going first', () => {
    const cache = new PayloadSchemaCache();
    const kept = cache.validatorOf(schema(0));
    const dropped = cache.validatorOf(schema(1));
    for (let i = 2; i <= 500; i++) {
      cache.validatorOf(schema(i));
      cache.validatorOf(schema(0)); // used again and again: stays
    }
    expect(cache.size).toBe(500);
    expect(cache.validatorOf(schema(0))).toBe(kept);
    expect(cache.validatorOf(schema(1))).not.toBe(dropped);
  });

  it('should compile two schemas with the same $id apart (schemas are not registered by id)', () => {
    const cache = new PayloadSchemaCache();
    const a = cache.validatorOf({ $id: 'https://x.example/s', type: 'string' });
    const b = cache.validatorOf({ $id: 'https://x.example/s', type: 'number' });
    expect([a('s'), b('s'), b(1)]).toEqual([true, false, true]);
  });
});
