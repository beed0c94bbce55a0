import { Matches, registerDecorator, type ValidationOptions } from 'class-validator';
import { cidrProblem } from './cidr.js';
import { repeatedHeader } from './headers.js';

/** RFC 9110 token: what a header name may contain. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Visible ASCII, space, tab and obs-text; no CR, LF or NUL (header injection). */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Headers the service owns: framing, routing and the signature headers. */
export const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'proxy-authorization',
  'proxy-connection',
  'expect',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
]);

export const MAX_HEADERS = 50;
export const MAX_HEADER_VALUE_LENGTH = 4096;
export const MAX_URL_LENGTH = 2048;

/** Names axios leaves out of every request (its guard against prototype pollution): refused, not stored and then dropped. */
const UNSENDABLE_HEADERS = new Set(['constructor', 'prototype', '__proto__']);

/** Why `value` is not an acceptable header map, or undefined. */
export function headerMapProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'must be an object of header name to string value';
  const entries = Object.entries(value);
  if (entries.length > MAX_HEADERS) return `at most ${MAX_HEADERS} headers`;
  // Header names are case-insensitive: two spellings of one name would both be sent.
  const repeated = repeatedHeader(Object.keys(value));
  if (repeated) return `header ${repeated[0]} is given twice (as ${repeated.join(' and ')}): header names are compared whatever their case`;
  for (const [name, v] of entries) {
    if (!HEADER_NAME.test(name)) return `invalid header name ${JSON.stringify(name)}`;
    if (RESERVED_HEADERS.has(name.toLowerCase()) || name.toLowerCase().startsWith('webhook-'))
      return `header ${name} is set by the service and cannot be given`;
    if (UNSENDABLE_HEADERS.has(name)) return `header ${name} cannot be sent: the HTTP client (axios) drops a header of that name`;
    if (typeof v !== 'string') return `header ${name} must be a string`;
    if (v.length > MAX_HEADER_VALUE_LENGTH) return `header ${name} is longer than ${MAX_HEADER_VALUE_LENGTH} characters`;
    if (!HEADER_VALUE.test(v)) return `header ${name} contains a control character (CR, LF or NUL)`;
  }
  return undefined;
}

/** Why `value` is not an absolute http(s) URL we can call, or undefined. */
export function httpUrlProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return 'must be a string';
  if (value.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must use http or https';
  if (!url.hostname) return 'must name a host';
  // The transport would drop them silently, and they would be stored and shown in clear.
  if (url.username || url.password) return 'must not contain credentials (user:password@); send an Authorization header instead';
  // eslint-disable-next-line no-control-regex -- control characters are what this refuses
  if (/[\s\x00-\x1f]/.test(value)) return 'must not contain whitespace or control characters';
  return undefined;
}

function fromProblem(name: string, problem: (v: unknown) => string | undefined, options?: ValidationOptions) {
  return (object: object, propertyName: string) =>
    registerDecorator({
      name,
      target: object.constructor,
      propertyName,
      options,
      validator: {
        validate: (v: unknown) => problem(v) === undefined,
        defaultMessage: (args) => `${args?.property} ${problem(args?.value)}`,
      },
    });
}

export const IsHttpUrl = (options?: ValidationOptions) => fromProblem('isHttpUrl', httpUrlProblem, options);
export const IsHeaderMap = (options?: ValidationOptions) => fromProblem('isHeaderMap', headerMapProblem, options);

/** Postgres text cannot hold NUL: strings that reach a text column are refused at the door instead of failing the insert. */
// eslint-disable-next-line no-control-regex -- NUL is what this refuses
export const NoNul = () => Matches(/^[^\u0000]*$/, { message: '$property must not contain NUL characters' });

/** Why `value` is not a list of CIDRs (ALLOW_PRIVATE_NETWORKS), naming every bad entry, or undefined. */
export function cidrListProblem(value: unknown): string | undefined {
  if (!Array.isArray(value)) return 'must be a comma-separated list of CIDRs';
  const bad = value.map((c) => (typeof c === 'string' ? cidrProblem(c) : 'not a string')).filter(Boolean);
  return bad.length > 0 ? `has invalid entries: ${bad.join('; ')}` : undefined;
}
export const IsCidrList = (options?: ValidationOptions) => fromProblem('isCidrList', cidrListProblem, options);

/**
 * Nesting depth of a parsed JSON value (a scalar is 0, `{}` and `[]` are 1), or
 * `Infinity` as soon as it exceeds `limit`. Iterative, so a hostile document
 * cannot overflow the stack here, and it stops early on the first too-deep branch.
 */
export function jsonDepth(value: unknown, limit: number): number {
  if (typeof value !== 'object' || value === null) return 0;
  let max = 0;
  const stack: Array<[object, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (depth > limit) return Infinity;
    if (depth > max) max = depth;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return max;
}

/** Text jsonb cannot hold: a NUL character, or half of a UTF-16 surrogate pair (jsonb refuses both escapes, a 500 had they reached it). */
const unstorable = (s: string) => s.includes('\u0000') || !s.isWellFormed();

/**
 * Where in a parsed JSON value (a JSON Pointer, `/items/0/name`; `''` for the value
 * itself) a key or string is that jsonb cannot store (an object's keys are looked at
 * before its values), or undefined. Iterative, as jsonDepth.
 */
export function unstorableTextAt(value: unknown): string | undefined {
  const stack: Array<[unknown, string]> = [[value, '']];
  while (stack.length > 0) {
    const [node, path] = stack.pop()!;
    if (typeof node === 'string') {
      if (unstorable(node)) return path;
    } else if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push([node[i], `${path}/${i}`]);
    } else if (typeof node === 'object' && node !== null) {
      for (const [k, v] of Object.entries(node).reverse()) {
        const here = `${path}/${k.replaceAll('~', '~0').replaceAll('/', '~1')}`;
        if (unstorable(k)) return here;
        stack.push([v, here]);
      }
    }
  }
  return undefined;
}

/** unstorableTextAt's problem as a sentence about `what` (`payload`, `schema`), or undefined. */
export function unstorableTextProblem(what: string, value: unknown): string | undefined {
  const at = unstorableTextAt(value);
  if (at === undefined) return undefined;
  return `${what}${at ? ` at ${at}` : ''} holds a NUL character or a lone UTF-16 surrogate, which cannot be stored`;
}

/** The destination key of per-host limits: scheme://host:port, default port spelled out. */
export function destinationOf(url: string): string {
  const u = new URL(url);
  const port = u.port || (u.protocol === 'https:' ? '443' : '80');
  return `${u.protocol}//${u.hostname}:${port}`;
}
