import { describe, expect, it } from 'vitest';
import { PayloadSchemas, SchemaRefused } from './checks/payload-schemas.mjs';

const schema = (n: number) => JSON.stringify({ type: 'object', properties: { [`f${n}`]: { type: 'integer' } }, required: [`f${n}`] });

/** The schemas as a payload check thread holds them (PayloadCheckPool runs them there); schemas go as JSON text. */
class Cache extends PayloadSchemas {
  validatorOf(schema: string | object) {
    return super.validatorOf(typeof schema === 'string' ? schema : JSON.stringify(schema));
  }
  problemOf(schema: string | object, payload: unknown) {
    return super.problemOf(typeof schema === 'string' ? schema : JSON.stringify(schema), payload);
  }
}

describe(PayloadSchemas.name, () => {
  it('should compile a schema once and reuse it while its text is the same', () => {
    const cache = new Cache();
    const first = cache.validatorOf(schema(1));
    expect(cache.validatorOf(schema(1))).toBe(first);
    expect(cache.size).toBe(1);
    expect(cache.validatorOf(schema(2))).not.toBe(first);
  });

  it('should name the JSON path of the first problem', () => {
    const cache = new Cache();
    const s = { type: 'object', properties: { order: { type: 'object', properties: { amount: { type: 'number' } } } }, additionalProperties: false };
    expect(cache.problemOf(s, { order: { amount: 1 } })).toBeUndefined();
    expect(cache.problemOf(s, { order: { amount: 'x' } })).toEqual({ path: '/order/amount', message: 'must be number' });
    expect(cache.problemOf(s, { extra: 1 })).toEqual({ path: '', message: 'must NOT have additional properties: extra' });
    expect(cache.problemOf({ type: 'string', format: 'email' }, 'not-an-address')?.message).toMatch(/email/);
  });

  it('should keep at most 500 compiled schemas, the least recently used going first', () => {
    const cache = new Cache();
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
    const cache = new Cache();
    const a = cache.validatorOf({ $id: 'https://x.example/s', type: 'string' });
    const b = cache.validatorOf({ $id: 'https://x.example/s', type: 'number' });
    expect([a('s'), b('s'), b(1)]).toEqual([true, false, true]);
  });

  it('should match patterns in linear time: a backtracking pattern over a hostile string answers at once (ReDoS guard)', () => {
    const cache = new Cache();
    // V8's own engine takes ~2.4 s per match of 26 characters here (bounded, so the test fails rather than hangs without the guard)
    const hostile = `${'a'.repeat(26)}!`;
    const catastrophic = '^(a+)+$';
    const started = performance.now();
    expect(cache.problemOf({ type: 'string', pattern: catastrophic }, hostile)?.message).toMatch(/must match pattern/);
    expect(cache.problemOf({ type: 'object', patternProperties: { [catastrophic]: { type: 'integer' } } }, { [hostile]: 'x' })).toBeUndefined();
    expect(cache.problemOf({ type: 'object', propertyNames: { pattern: catastrophic } }, { [hostile]: 1 })?.message).toMatch(/must match pattern/);
    expect(performance.now() - started).toBeLessThan(500);
  });

  it('should keep what patterns mean in JSON Schema: found anywhere unless anchored, unicode, named groups', () => {
    const cache = new Cache();
    const passes = (pattern: string, s: string) => cache.problemOf({ type: 'string', pattern }, s) === undefined;
    expect([passes('b+', 'abbc'), passes('^b+$', 'abbc'), passes('^\\d{4}-\\p{L}+$', '2026-héllo'), passes('^(?<year>\\d{4})$', '2026')]).toEqual([
      true,
      false,
      true,
      true,
    ]);
    const keyed = { type: 'object', patternProperties: { '^x-': { type: 'string' } } };
    expect(cache.problemOf(keyed, { 'x-a': 1 })?.path).toBe('/x-a');
    expect(cache.problemOf(keyed, { 'y-a': 1 })).toBeUndefined();
  });

  it('should refuse a pattern RE2 cannot match in linear time (lookaround, backreference) with a 400 naming it', () => {
    const cache = new Cache();
    for (const pattern of ['^(?=a)a$', '(?<!x)y', '^(a)\\1$']) {
      let error: unknown;
      try {
        cache.validatorOf({ type: 'string', pattern });
      } catch (e) {
        error = e;
      }
      expect(error, pattern).toBeInstanceOf(SchemaRefused);
      expect((error as SchemaRefused).message).toContain(`pattern ${JSON.stringify(pattern)} is not supported`);
    }
    expect(cache.size).toBe(0);
  });
});
