import 'reflect-metadata';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CreateBatchDto } from '../batches/dto/create-batch.dto.js';
import { isPlainJson, passesAllRules } from './validation.fast-path.js';

/** The options the API's ValidationPipe validates with (validation.pipe.ts). */
const OPTIONS = { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: true, stopAtFirstError: true };

const valid = {
  label: 'orders',
  defaults: { method: 'PUT', headers: { 'x-a': '1' }, timeoutMs: 5000, maxAttempts: 3, retryDelaysMs: [100, 200] },
  callbacks: [
    { url: 'https://example.com/hooks/a', body: { order: 1, nested: [{ a: null }] }, externalId: 'o-1' },
    { url: 'http://127.0.0.1:9/b', method: 'POST', headers: { authorization: 'Bearer x' }, body: 'plain', runAt: '2030-01-01T00:00:00Z', timeoutMs: 1 },
  ],
};

const instance = (plain: unknown) => plainToInstance(CreateBatchDto, plain) as object;
const classValidatorErrors = (plain: unknown) => validateSync(instance(plain), OPTIONS).length;

/** Values that break one rule or another, or none. */
const anyValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(
    undefined,
    null,
    '',
    'x',
    0,
    -1,
    1.5,
    3_600_001,
    '2030-01-01',
    'ftp://x/',
    'http://u:p@x/',
    'https://example.com/h',
    ['a'],
    [1, -1],
    {},
    { 'x-a': 'v' },
    { Host: 'h' },
    'a\u0000b',
  ),
);
const field = fc.constantFrom(
  'url',
  'method',
  'headers',
  'body',
  'timeoutMs',
  'maxAttempts',
  'retryDelaysMs',
  'runAt',
  'externalId',
  'unknown',
  'label',
  'defaults',
  'callbacks',
);

describe('passesAllRules', () => {
  it('should accept a valid batch, as class-validator does', () => {
    expect(classValidatorErrors(valid)).toBe(0);
    expect(passesAllRules(instance(valid), OPTIONS)).toBe(true);
  });

  it.each<[string, unknown]>([
    ['an unknown field', { ...valid, extra: 1 }],
    ['an unknown field in a callback', { callbacks: [{ url: 'https://e.com/', extra: 1 }] }],
    ['a bad URL', { callbacks: [{ url: 'ftp://e.com/' }] }],
    ['a receiver that is not a string', { callbacks: [{ receiver: 5 }] }],
    ['a URL that is not a string (a missing one is allowed: the receiver may give it)', { callbacks: [{ url: 5 }] }],
    ['no callbacks', { callbacks: [] }],
    ['a callback that is not an object', { callbacks: ['https://e.com/'] }],
    ['a reserved header in the defaults', { defaults: { headers: { host: 'x' } }, callbacks: [{ url: 'https://e.com/' }] }],
    ['a negative retry delay', { callbacks: [{ url: 'https://e.com/', retryDelaysMs: [1, -1] }] }],
    ['NUL in a label', { label: 'a\u0000', callbacks: [{ url: 'https://e.com/' }] }],
    ['defaults that are a string', { defaults: 'x', callbacks: [{ url: 'https://e.com/' }] }],
  ])('should leave %s to class-validator', (_name, plain) => {
    expect(classValidatorErrors(plain)).toBeGreaterThan(0);
    expect(passesAllRules(instance(plain), OPTIONS)).toBe(false);
  });

  it('should never accept what class-validator refuses (generated batches with one field changed)', () => {
    let accepted = 0;
    fc.assert(
      fc.property(fc.nat({ max: 2 }), field, anyValue, fc.boolean(), (index, name, value, inDefaults) => {
        const plain = structuredClone(valid) as Record<string, unknown> & { callbacks: Array<Record<string, unknown>>; defaults: Record<string, unknown> };
        const target = ['label', 'defaults', 'callbacks'].includes(name) ? plain : inDefaults ? plain.defaults : (plain.callbacks[index] ??= {});
        target[name] = value;
        const fast = passesAllRules(instance(plain), OPTIONS);
        if (fast) accepted++;
        return !fast || classValidatorErrors(plain) === 0;
      }),
      { numRuns: 3_000 },
    );
    expect(accepted).toBeGreaterThan(100); // the fast path is really taken
  });

  it('should answer false for options it does not model', () => {
    expect(passesAllRules(instance(valid), { ...OPTIONS, groups: ['a'] })).toBe(false);
    expect(passesAllRules(instance(valid), { ...OPTIONS, forbidNonWhitelisted: false })).toBe(false);
    expect(passesAllRules(instance(valid), { ...OPTIONS, skipMissingProperties: true })).toBe(false);
  });
});

describe('isPlainJson', () => {
  it('should accept what JSON.parse makes', () => {
    expect(isPlainJson(JSON.parse('{"a":[1,"x",null,true,{"b":{}}],"c":-1.5}'))).toBe(true);
    expect(isPlainJson(JSON.parse('"x"'))).toBe(true);
  });

  it.each<[string, unknown]>([
    ['a "__proto__" key', JSON.parse('{"a":{"__proto__":{"x":1}}}')],
    ['a "prototype" key', { a: [{ prototype: 1 }] }],
    ['a "constructor" key', { constructor: 'x' }],
    // eslint-disable-next-line no-sparse-arrays -- the hole is the case under test
    ['a sparse array', { a: [1, , 3] }],
    ['a binary value', { a: Buffer.from('x') }],
    ['a class instance', { a: new Date() }],
    ['undefined', { a: undefined }],
    ['an object without prototype', { a: Object.create(null) }],
  ])('should refuse %s', (_name, value) => {
    expect(isPlainJson(value)).toBe(false);
  });
});
