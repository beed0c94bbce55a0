import { describe, expect, it } from 'vitest';
import { typeNameProblem } from './event-type.policy.js';

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
