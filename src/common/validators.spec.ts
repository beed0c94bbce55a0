import { describe, expect, it } from 'vitest';
import { cidrListProblem, headerMapProblem, httpUrlProblem, jsonDepth, MAX_HEADERS, unstorableTextAt } from './validators.js';

describe('headerMapProblem', () => {
  it.each<[string, unknown, RegExp | undefined]>([
    ['an ordinary map', { 'x-a': '1', 'Content-Type': 'text/plain', Authorization: 'Bearer t' }, undefined],
    ['tabs and obs-text in a value', { 'x-a': 'a\tb\u00e9' }, undefined],
    ['an empty value', { 'x-a': '' }, undefined],
    ['an array', ['x-a'], /must be an object/],
    ['null', null, /must be an object/],
    ['a space in a name', { 'x a': '1' }, /invalid header name/],
    ['a colon in a name', { 'x:a': '1' }, /invalid header name/],
    ['CR/LF in a name', { 'x\r\na': '1' }, /invalid header name/],
    ['a non-ASCII name', { 'x-é': '1' }, /invalid header name/],
    ['CR/LF in a value', { 'x-a': '1\r\nx-b: 2' }, /control character/],
    ['a bare CR in a value', { 'x-a': '1\r2' }, /control character/],
    ['NUL in a value', { 'x-a': '\u0000' }, /control character/],
    ['DEL in a value', { 'x-a': '\u007f' }, /control character/],
    ['a character above U+00FF in a value', { 'x-a': '✓' }, /control character/],
    ['a number value', { 'x-a': 1 }, /must be a string/],
    ['Host in any case', { hOsT: 'x' }, /set by the service/],
    ['Content-Length', { 'content-length': '1' }, /set by the service/],
    ['Transfer-Encoding', { 'Transfer-Encoding': 'chunked' }, /set by the service/],
    ['Connection', { Connection: 'upgrade' }, /set by the service/],
    ['Upgrade', { Upgrade: 'websocket' }, /set by the service/],
    ['Proxy-Authorization', { 'Proxy-Authorization': 'x' }, /set by the service/],
    ['webhook-id', { 'Webhook-Id': 'x' }, /set by the service/],
    ['any webhook-* header', { 'webhook-anything': 'x' }, /set by the service/],
    ['a header named constructor, which axios drops', { constructor: 'x' }, /cannot be sent/],
    ['a header named prototype', { prototype: 'x' }, /cannot be sent/],
    ['names of other Object.prototype members, which are sent', { toString: 'x', valueOf: 'y', Constructor: 'z' }, undefined],
    ['a value over 4096 characters', { 'x-a': 'v'.repeat(4097) }, /4096/],
    [`${MAX_HEADERS + 1} headers`, Object.fromEntries(Array.from({ length: MAX_HEADERS + 1 }, (_, i) => [`x-${i}`, 'v'])), /at most 50/],
  ])('%s', (_name, value, problem) => {
    if (problem) expect(headerMapProblem(value)).toMatch(problem);
    else expect(headerMapProblem(value)).toBeUndefined();
  });
});

describe('httpUrlProblem', () => {
  it.each<[unknown, RegExp | undefined]>([
    ['https://example.com/hook?a=1#f', undefined],
    ['http://127.0.0.1:8080/', undefined],
    ['http://[::1]/', undefined],
    [`https://example.com/${'a'.repeat(2020)}`, undefined],
    [`https://example.com/${'a'.repeat(2048)}`, /at most 2048/],
    ['https://user:secret@example.com/', /credentials/],
    ['https://user@example.com/', /credentials/],
    ['ftp://example.com/', /http or https/],
    ['javascript:alert(1)', /http or https/],
    ['data:text/plain,x', /http or https/],
    ['/relative', /absolute URL/],
    ['http://', /absolute URL/],
    ['https://exa mple.com/', /absolute URL/],
    ['https://example.com/a b', /whitespace/],
    ['https://example.com/\ta', /whitespace/],
    [' https://example.com/', /whitespace/],
    [42, /must be a string/],
  ])('%j', (value, problem) => {
    if (problem) expect(httpUrlProblem(value)).toMatch(problem);
    else expect(httpUrlProblem(value)).toBeUndefined();
  });
});

describe('jsonDepth', () => {
  const nest = (d: number) => JSON.parse(`${'['.repeat(d)}${']'.repeat(d)}`);
  it.each<[string, unknown, number, number]>([
    ['a scalar', 'x', 5, 0],
    ['null', null, 5, 0],
    ['an empty object', {}, 5, 1],
    ['an object of scalars', { a: 1, b: 'x' }, 5, 1],
    ['the deepest branch counts', { a: 1, b: [{ c: [] }], d: {} }, 5, 4],
    ['exactly at the limit', nest(5), 5, 5],
    ['one past the limit', nest(6), 5, Infinity],
    ['100,000 deep, without a stack overflow', nest(100_000), 32, Infinity],
  ])('%s', (_name, value, limit, depth) => {
    expect(jsonDepth(value, limit)).toBe(depth);
  });
});

describe('cidrListProblem', () => {
  it.each<[unknown, RegExp | undefined]>([
    [[], undefined],
    [['127.0.0.0/8', '::1'], undefined],
    [['127.0.0.0/8', 'nope', '10.0.0.0/99'], /"nope".*"10\.0\.0\.0\/99"/],
    ['127.0.0.0/8', /comma-separated list/],
  ])('%j', (value, problem) => {
    if (problem) expect(cidrListProblem(value)).toMatch(problem);
    else expect(cidrListProblem(value)).toBeUndefined();
  });
});

describe('unstorableTextAt', () => {
  it.each<[string, unknown, string | undefined]>([
    ['a scalar that is fine', 'text 💥', undefined],
    ['numbers, booleans, null, nesting', { a: [1, true, null, { b: 'ok' }] }, undefined],
    ['a NUL in the value itself', 'x\u0000', ''],
    ['a lone high surrogate in a value', { a: ['ok', '\ud800'] }, '/a/1'],
    ['a lone low surrogate in a key', { a: { '\udc00': 1 } }, '/a/\udc00'],
    ['a NUL in a key, the pointer escaped', { 'x/y~z': { 'k\u0000': 1 } }, '/x~1y~0z/k\u0000'],
    ['the first in document order', { a: 'ok', b: ['\u0000'], c: '\u0000' }, '/b/0'],
  ])('%s', (_, value, at) => {
    expect(unstorableTextAt(value)).toBe(at);
  });
});
