import { describe, expect, it } from 'vitest';
import { layerHeaders, repeatedHeader } from './headers.js';
import { headerMapProblem } from './validators.js';

describe(layerHeaders.name, () => {
  it.each([
    [[{ 'X-Dup': 'default' }, { 'x-dup': 'own' }], { 'x-dup': 'own' }],
    [[{ 'user-agent': 'service' }, { 'User-Agent': 'client' }], { 'User-Agent': 'client' }],
    [[{ a: '1', B: '2' }, undefined, { b: '3' }, null, { C: '4' }], { a: '1', b: '3', C: '4' }],
    // one stored map with two spellings (an event's content-type over its receiver's): the later one is sent
    [
      [{ 'user-agent': 'service' }, { 'Content-Type': 'text/plain', 'content-type': 'application/json' }],
      { 'user-agent': 'service', 'content-type': 'application/json' },
    ],
  ] as const)('should lay %j into one header per name, later layers winning', (layers, expected) => {
    const merged = layerHeaders(...(layers as unknown as Array<Record<string, string>>));
    expect(merged).toEqual(expected);
    expect(repeatedHeader(Object.keys(merged))).toBeUndefined();
  });
});

describe(headerMapProblem.name, () => {
  it.each([
    [{ 'X-Dup': 'a', 'x-dup': 'b' }, /header X-Dup is given twice \(as X-Dup and x-dup\)/],
    [{ 'Content-Type': 'text/plain', 'content-type': 'application/json' }, /header Content-Type is given twice/],
    [{ a: '1', 'X-TOKEN': '1', 'x-Token': '2' }, /header X-TOKEN is given twice \(as X-TOKEN and x-Token\)/],
  ])('should refuse %j', (headers, says) => {
    expect(headerMapProblem(headers)).toMatch(says);
  });

  it('should take distinct names', () => {
    expect(headerMapProblem({ 'X-A': '1', 'x-b': '2', 'Content-Type': 'text/plain' })).toBeUndefined();
  });
});
