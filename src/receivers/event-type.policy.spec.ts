import { describe, expect, it } from 'vitest';
import { patternProblem, patternsOf, typeNameProblem } from './event-type.policy.js';

describe('typeNameProblem', () => {
  it.each([
    ['order.paid', true],
    ['a', true],
    ['invoice_v2.line-item.added', true],
    [`${'x'.repeat(126)}.y`, true],
    [`${'x'.repeat(127)}.y`, false],
    ['Order.paid', false],
    ['order..paid', false],
    ['.order', false],
    ['order.', false],
    ['order.*', false],
    ['', false],
    [42, false],
  ])('%s: valid %s', (name, valid) => {
    expect(typeNameProblem(name) === undefined).toBe(valid);
  });
});

describe('patternProblem', () => {
  it.each([
    ['order.paid', true],
    ['order.*', true],
    ['a.b.*', true],
    ['*', false],
    ['order*', false],
    ['order.*.paid', false],
    ['.*', false],
    [`${'x'.repeat(126)}.*`, true],
    [`${'x'.repeat(127)}.*`, false],
  ])('%s: valid %s', (pattern, valid) => {
    expect(patternProblem(pattern) === undefined).toBe(valid);
  });
});

describe('patternsOf', () => {
  it('should list the type and each prefix with .*', () => {
    expect(patternsOf('a.b.c')).toEqual(['a.b.c', 'a.b.*', 'a.*']);
    expect(patternsOf('order')).toEqual(['order']);
  });
});
