import { describe, expect, it } from 'vitest';
import {
  attemptError,
  codeProblem,
  credentialsDestinationProblem,
  errorView,
  eventTypeOf,
  isJsonBody,
  readOutput,
  type SandboxError,
  type WebhookRequest,
} from './transform.policy.js';

const limits = { timeoutMs: 50, memoryMb: 16, maxBodyBytes: 100 };
const input: WebhookRequest = {
  method: 'POST',
  url: 'https://shop.example/hooks',
  headers: { 'content-type': 'application/json', 'webhook-event-type': 'order.paid', 'x-shop': '42' },
  body: '{"order":42}',
};
/** The sandbox's answer for a returned webhook: its fields as JSON, what its body is, a newline, the body. */
const answer = (fields: Record<string, unknown>, body: 'keep' | 'none' | 'text' | 'json', text = '') => `${JSON.stringify({ ...fields, body })}\n${text}`;

describe('readOutput', () => {
  it.each([
    ['null: a cancel', null, { kind: 'cancel' }],
    ['left-out fields keep the webhook’s', answer({}, 'keep'), { kind: 'send', request: input }],
    [
      'a JSON body gets content-type when it has none',
      answer({ headers: { 'webhook-event-type': 'order.paid' } }, 'json', '{"text":"hi"}'),
      { kind: 'send', request: { ...input, headers: { 'webhook-event-type': 'order.paid', 'content-type': 'application/json' }, body: '{"text":"hi"}' } },
    ],
    [
      'a text body goes as it is, with the content-type given',
      answer({ headers: { 'Content-Type': 'application/x-www-form-urlencoded' } }, 'text', 'a=1&b=2'),
      {
        kind: 'send',
        request: { ...input, headers: { 'webhook-event-type': 'order.paid', 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'a=1&b=2' },
      },
    ],
    ['body null sends none', answer({ method: 'delete' }, 'none'), { kind: 'send', request: { ...input, method: 'DELETE', body: null } }],
    [
      "the service's own header dropped by the handler still goes",
      answer({ headers: {} }, 'keep'),
      { kind: 'send', request: { ...input, headers: { 'webhook-event-type': 'order.paid' } } },
    ],
    ['a lone surrogate becomes U+FFFD, as UTF-8 sends it', answer({}, 'text', 'x\ud800'), { kind: 'send', request: { ...input, body: 'x\ufffd' } }],
  ])('%s', (_, text, expected) => {
    expect(readOutput(text, input, limits)).toEqual(expected);
  });

  it.each([
    [
      'a method the API does not send',
      answer({ method: 'TRACE' }, 'keep'),
      'the handler returned method "TRACE": it must be one of POST, PUT, PATCH, DELETE, GET',
    ],
    ['a URL that is not http(s)', answer({ url: 'file:///etc/passwd' }, 'keep'), 'the handler returned url "file:///etc/passwd", which must use http or https'],
    ['credentials in the URL', answer({ url: 'https://u:p@shop.example/' }, 'keep'), expect.stringContaining('must not contain credentials')],
    ['headers that are not an object', answer({ headers: ['x'] }, 'keep'), 'the handler returned headers that are not an object of name to string value'],
    ['a header that is not a string', answer({ headers: { 'x-n': 1 } }, 'keep'), 'the handler returned headers where header x-n must be a string'],
    ['a reserved header', answer({ headers: { 'Content-Length': '1' } }, 'keep'), expect.stringContaining('Content-Length is set by the service')],
    [
      'a changed service header',
      answer({ headers: { 'webhook-event-type': 'forged' } }, 'keep'),
      expect.stringContaining('webhook-event-type is set by the service'),
    ],
    ['a header given twice', answer({ headers: { 'x-a': '1', 'X-A': '2' } }, 'keep'), expect.stringContaining('is given twice')],
    ['a header with CR LF', answer({ headers: { 'x-a': 'a\r\nb: c' } }, 'keep'), expect.stringContaining('control character')],
    [
      'a body past MAX_CALLBACK_BODY_BYTES',
      answer({}, 'text', 'é'.repeat(51)),
      'the handler returned a body of 102 bytes, more than MAX_CALLBACK_BODY_BYTES (100)',
    ],
    ['a body with NUL', answer({}, 'text', 'a\u0000b'), 'the handler returned a body with a NUL character, which cannot be recorded'],
  ])('should refuse %s', (_, text, message) => {
    expect(readOutput(text, input, limits)).toEqual({ kind: 'error', error: { message, line: null, column: null } });
  });
});

describe('errorView', () => {
  const error = (e: Partial<SandboxError>): SandboxError => ({ kind: 'run', name: 'TypeError', message: 'x', stack: '', ...e });
  it.each([
    [
      'the first frame in the code',
      error({ stack: '    at f (transform.js:3:9)\n    at handler (transform.js:7:3)\n' }),
      9,
      { message: 'TypeError: x', line: 3, column: 9 },
    ],
    [
      'a frame past the code is the wrapper’s',
      error({ stack: '    at <anonymous> (transform.js:14:75)\n' }),
      9,
      { message: 'TypeError: x', line: null, column: null },
    ],
    [
      'a timeout',
      error({ kind: 'timeout', message: 'interrupted', stack: '    at handler (transform.js:2:5)\n' }),
      9,
      { message: 'timed out after 50 ms', line: 2, column: 5 },
    ],
    [
      'out of memory',
      error({ kind: 'memory', message: 'out of memory' }),
      9,
      { message: 'out of memory (the sandbox holds 16 MiB)', line: null, column: null },
    ],
    [
      'a deep recursion',
      error({ name: 'InternalError', message: 'stack overflow' }),
      9,
      { message: 'stack overflow (recursion too deep)', line: null, column: null },
    ],
    [
      'the engine',
      error({ kind: 'engine', message: 'the sandbox thread stopped' }),
      9,
      { message: 'the sandbox failed: the sandbox thread stopped', line: null, column: null },
    ],
  ])('%s', (_, e, lines, expected) => {
    expect(errorView(e, lines, limits)).toEqual(expected);
  });

  it('should make an attempt error that names the line', () => {
    expect(attemptError({ message: 'TypeError: x', line: 3, column: 9 })).toBe('transform_error: TypeError: x (line 3:9)');
    expect(attemptError({ message: 'timed out after 50 ms', line: null, column: null })).toBe('transform_error: timed out after 50 ms');
  });
});

describe('inputs', () => {
  it.each([
    [{ 'content-type': 'application/json' }, '{}', true],
    [{ 'Content-Type': 'application/cloudevents+json; charset=utf-8' }, '{}', true],
    [{ 'content-type': 'text/plain' }, '{"a":1}', false],
    [{}, ' [1]', true],
    [{}, 'a=1', false],
    [{ 'content-type': 'application/json' }, null, false],
  ])('isJsonBody(%j, %j) is %s', (headers, body, json) => {
    expect(isJsonBody(headers, body)).toBe(json);
  });

  it('should read the event type from the header an event delivery carries', () => {
    expect(eventTypeOf({ 'Webhook-Event-Type': 'order.paid' })).toBe('order.paid');
    expect(eventTypeOf({})).toBeNull();
  });

  it.each([
    ['', 'transform.code must be a non-empty string'],
    [42, 'transform.code must be a non-empty string'],
    ['x'.repeat(65_537), 'transform.code must be at most 65536 bytes'],
    ['function handler(w) { return "\u0000"; }', 'transform.code must not contain NUL characters or lone UTF-16 surrogates'],
    ['function handler(w) { return w; }', undefined],
  ])('codeProblem(%#)', (code, problem) => {
    expect(codeProblem(code)).toBe(problem);
  });
});

describe('credentialsDestinationProblem', () => {
  const stored = 'https://shop.example:443';
  it.each([
    ['another path at the same destination', 'https://shop.example/hooks/slack?x=1', true, false],
    ['the default port written out', 'https://shop.example:443/other', true, false],
    ['another host', 'https://collector.example/hooks', true, true],
    ['another port', 'https://shop.example:8443/hooks', true, true],
    ['plain http to the same host', 'http://shop.example/hooks', true, true],
    ['another host, the receiver without credentials', 'https://collector.example/hooks', false, false],
  ])('%s', (_, url, hasCredentials, refused) => {
    const problem = credentialsDestinationProblem(url, stored, hasCredentials);
    expect(problem !== undefined).toBe(refused);
    if (problem) expect(problem.message).toContain(`go only to the callback's own destination, ${stored}`);
  });
});
