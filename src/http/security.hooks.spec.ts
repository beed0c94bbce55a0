import { describe, expect, it } from 'vitest';
import { jsonExceedsDepth } from './security.hooks.js';
import { jsonDepth } from '../common/validators.js';

const bytes = (s: string) => Buffer.from(s, 'utf8');

describe(jsonExceedsDepth.name, () => {
  it.each([
    ['[]', 1],
    ['{"a":[{"b":{}}]}', 4],
    ['"[[[[[["', 0],
    ['["]]]]\\\\", [[1]]]', 3],
    ['{"k\\"[[[":{"v":"\\u005b\\"{"}}', 2],
    ['["é[ü{", {"😀":[["{"]]}]', 4],
    [`${'['.repeat(40)}${']'.repeat(40)}`, 40],
  ])('should measure %s as %d deep, as the parsed value is', (text, depth) => {
    expect(jsonDepth(JSON.parse(text), 100)).toBe(depth);
    expect(jsonExceedsDepth(bytes(text), depth)).toBe(false);
    expect(jsonExceedsDepth(bytes(text), depth - 1)).toBe(depth > 0);
  });

  it('should find an 8 MB [[[[… too deep, and the same brackets inside a string not deep at all', () => {
    const deep = Buffer.alloc(8 * 1024 * 1024, '[');
    expect(jsonExceedsDepth(deep, 36)).toBe(true);
    deep[0] = '"'.charCodeAt(0);
    expect(jsonExceedsDepth(deep, 36)).toBe(false);
  });
});
