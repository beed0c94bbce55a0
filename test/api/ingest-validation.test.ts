import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchController } from '../../src/batches/batch.controller.js';
import { connect } from '../support/database.js';
import { startTestService, type TestService } from '../support/service.js';

/** Small limits so every breach is cheap to provoke. */
const LIMITS = { maxCallbacksPerBatch: 5, maxCallbackBodyBytes: 1000, maxRequestBytes: 64 * 1024, maxJsonDepth: 8, httpMaxTimeoutMs: 60_000 };

const URL_OK = 'https://example.com/hook';
const one = (over: Record<string, unknown> = {}) => ({ callbacks: [{ url: URL_OK, ...over }] });
const nested = (depth: number): unknown => (depth === 0 ? 1 : { a: nested(depth - 1) });
const manyHeaders = (n: number, prefix = 'x-h') => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, 'v']));

interface Case {
  name: string;
  /** A JSON value (sent as JSON) or a raw string body. */
  body: unknown;
  raw?: boolean;
  headers?: Record<string, string>;
  status: number;
  code: string;
  /** Part of the message that tells the client what was wrong. */
  says?: RegExp;
}

const CASES: Case[] = [
  // URLs
  { name: 'a URL that is not a URL', body: one({ url: 'not a url' }), status: 400, code: 'validation_failed', says: /callbacks\.0\.url/ },
  { name: 'a relative URL', body: one({ url: '/hooks/a' }), status: 400, code: 'validation_failed', says: /absolute URL/ },
  { name: 'an ftp URL', body: one({ url: 'ftp://example.com/x' }), status: 400, code: 'validation_failed', says: /http or https/ },
  { name: 'a javascript: URL', body: one({ url: 'javascript:alert(1)' }), status: 400, code: 'validation_failed', says: /http or https/ },
  { name: 'a file: URL', body: one({ url: 'file:///etc/passwd' }), status: 400, code: 'validation_failed' },
  { name: 'a URL with a space', body: one({ url: 'https://example.com/a b' }), status: 400, code: 'validation_failed', says: /whitespace/ },
  { name: 'a URL with CR/LF', body: one({ url: 'https://example.com/a\r\nHost: evil' }), status: 400, code: 'validation_failed' },
  { name: 'a URL over 2048 characters', body: one({ url: `https://example.com/${'a'.repeat(2048)}` }), status: 400, code: 'validation_failed', says: /2048/ },
  { name: 'a URL with credentials', body: one({ url: 'https://user:secret@example.com/hook' }), status: 400, code: 'validation_failed', says: /credentials/ },
  { name: 'a URL that is a number', body: one({ url: 42 }), status: 400, code: 'validation_failed' },
  { name: 'a callback without a URL', body: { callbacks: [{ body: 'x' }] }, status: 400, code: 'validation_failed' },
  // shapes class-validator's nested validation lets through on its own (regression: a 500)
  { name: 'a callback that is an array', body: { callbacks: [[]] }, status: 400, code: 'validation_failed', says: /callbacks/ },
  { name: 'defaults that are an array', body: { defaults: [[]], callbacks: [{ url: URL_OK }] }, status: 400, code: 'validation_failed', says: /defaults/ },
  // methods
  { name: 'an unknown method', body: one({ method: 'TRACE' }), status: 400, code: 'validation_failed', says: /method/ },
  { name: 'a method with CRLF', body: one({ method: 'POST\r\nX: y' }), status: 400, code: 'validation_failed' },
  { name: 'a method that is a number', body: one({ method: 1 }), status: 400, code: 'validation_failed' },
  // headers
  { name: 'a header name with a space', body: one({ headers: { 'Bad Header': 'x' } }), status: 400, code: 'validation_failed', says: /header name/ },
  { name: 'a header name with CR/LF', body: one({ headers: { 'x-a\r\nx-b': 'x' } }), status: 400, code: 'validation_failed', says: /header name/ },
  { name: 'a header name with a colon', body: one({ headers: { 'x-a:': 'x' } }), status: 400, code: 'validation_failed' },
  { name: 'an empty header name', body: one({ headers: { '': 'x' } }), status: 400, code: 'validation_failed' },
  {
    name: 'a header value with CR/LF',
    body: one({ headers: { 'x-a': 'ok\r\nx-injected: 1' } }),
    status: 400,
    code: 'validation_failed',
    says: /control character/,
  },
  { name: 'a header value with a bare LF', body: one({ headers: { 'x-a': 'ok\nx' } }), status: 400, code: 'validation_failed', says: /control character/ },
  { name: 'a header value with NUL', body: one({ headers: { 'x-a': 'a\u0000b' } }), status: 400, code: 'validation_failed', says: /control character/ },
  { name: 'a header value that is a number', body: one({ headers: { 'x-a': 1 } }), status: 400, code: 'validation_failed', says: /must be a string/ },
  { name: 'headers that are an array', body: one({ headers: ['x-a: 1'] }), status: 400, code: 'validation_failed' },
  { name: 'Host', body: one({ headers: { Host: 'internal.example' } }), status: 400, code: 'validation_failed', says: /set by the service/ },
  { name: 'Content-Length', body: one({ headers: { 'Content-Length': '0' } }), status: 400, code: 'validation_failed', says: /set by the service/ },
  { name: 'Transfer-Encoding', body: one({ headers: { 'transfer-encoding': 'chunked' } }), status: 400, code: 'validation_failed', says: /set by the service/ },
  { name: 'Connection', body: one({ headers: { Connection: 'close' } }), status: 400, code: 'validation_failed', says: /set by the service/ },
  { name: 'webhook-id', body: one({ headers: { 'webhook-id': 'forged' } }), status: 400, code: 'validation_failed', says: /set by the service/ },
  {
    name: 'Webhook-Signature',
    body: one({ headers: { 'Webhook-Signature': 'v1,forged' } }),
    status: 400,
    code: 'validation_failed',
    says: /set by the service/,
  },
  { name: 'webhook-timestamp', body: one({ headers: { 'webhook-timestamp': '1' } }), status: 400, code: 'validation_failed', says: /set by the service/ },
  {
    name: 'any other webhook-* header',
    body: one({ headers: { 'webhook-whatever': '1' } }),
    status: 400,
    code: 'validation_failed',
    says: /set by the service/,
  },
  {
    name: 'a reserved header in the defaults',
    body: { defaults: { headers: { host: 'x' } }, callbacks: [{ url: URL_OK }] },
    status: 400,
    code: 'validation_failed',
    says: /defaults/,
  },
  {
    name: 'header names that differ only by case',
    body: one({ headers: { 'X-Dup': 'a', 'x-dup': 'b' } }),
    status: 400,
    code: 'validation_failed',
    says: /header X-Dup is given twice \(as X-Dup and x-dup\)/,
  },
  {
    name: 'two Content-Types',
    body: one({ headers: { 'Content-Type': 'text/plain', 'content-type': 'application/json' } }),
    status: 400,
    code: 'validation_failed',
    says: /header Content-Type is given twice/,
  },
  {
    name: 'header names that differ only by case in the defaults',
    body: { defaults: { headers: { 'X-Token': 'a', 'X-TOKEN': 'b' } }, callbacks: [{ url: URL_OK }] },
    status: 400,
    code: 'validation_failed',
    says: /defaults.*X-Token is given twice/,
  },
  { name: '51 headers', body: one({ headers: manyHeaders(51) }), status: 400, code: 'validation_failed', says: /at most 50 headers/ },
  {
    name: '30 default + 30 own headers',
    body: { defaults: { headers: manyHeaders(30, 'x-d') }, callbacks: [{ url: URL_OK, headers: manyHeaders(30) }] },
    status: 400,
    code: 'validation_failed',
    says: /more than 50 headers/,
  },
  { name: 'a header value over 4096 characters', body: one({ headers: { 'x-a': 'v'.repeat(4097) } }), status: 400, code: 'validation_failed', says: /4096/ },
  // timeouts and attempts
  { name: 'timeoutMs 0', body: one({ timeoutMs: 0 }), status: 400, code: 'validation_failed', says: /timeoutMs/ },
  { name: 'a negative timeoutMs', body: one({ timeoutMs: -5 }), status: 400, code: 'validation_failed', says: /timeoutMs/ },
  { name: 'a fractional timeoutMs', body: one({ timeoutMs: 1.5 }), status: 400, code: 'validation_failed', says: /timeoutMs/ },
  { name: 'a timeoutMs over HTTP_MAX_TIMEOUT_MS', body: one({ timeoutMs: 60_001 }), status: 400, code: 'validation_failed', says: /at most 60000/ },
  { name: 'a huge timeoutMs', body: one({ timeoutMs: 1e15 }), status: 400, code: 'validation_failed', says: /timeoutMs/ },
  { name: 'a timeoutMs string', body: one({ timeoutMs: '1000' }), status: 400, code: 'validation_failed', says: /timeoutMs/ },
  { name: 'maxAttempts 0', body: one({ maxAttempts: 0 }), status: 400, code: 'validation_failed', says: /maxAttempts/ },
  { name: 'negative retry delays', body: one({ retryDelaysMs: [-1] }), status: 400, code: 'validation_failed', says: /retryDelaysMs/ },
  { name: 'retry delays of strings', body: one({ retryDelaysMs: ['5s'] }), status: 400, code: 'validation_failed', says: /retryDelaysMs/ },
  // other fields and types
  { name: 'a runAt that is no date', body: one({ runAt: 'tomorrow' }), status: 400, code: 'validation_failed', says: /runAt/ },
  { name: 'an externalId number', body: one({ externalId: 7 }), status: 400, code: 'validation_failed', says: /externalId/ },
  { name: 'a string body with NUL (Postgres text cannot hold it)', body: one({ body: 'a\u0000b' }), status: 400, code: 'validation_failed', says: /NUL/ },
  { name: 'a label with NUL', body: { label: 'a\u0000', callbacks: [{ url: URL_OK }] }, status: 400, code: 'validation_failed', says: /NUL/ },
  { name: 'an externalId with NUL', body: one({ externalId: '\u0000' }), status: 400, code: 'validation_failed', says: /NUL/ },
  { name: 'a label number', body: { label: 5, callbacks: [{ url: URL_OK }] }, status: 400, code: 'validation_failed', says: /label/ },
  {
    name: 'a label over 200 characters',
    body: { label: 'l'.repeat(201), callbacks: [{ url: URL_OK }] },
    status: 400,
    code: 'validation_failed',
    says: /label/,
  },
  { name: 'an unknown top-level field', body: { callbacks: [{ url: URL_OK }], priority: 1 }, status: 400, code: 'validation_failed', says: /priority/ },
  { name: 'an unknown callback field', body: one({ urll: URL_OK }), status: 400, code: 'validation_failed', says: /urll/ },
  { name: 'an unknown defaults field', body: { defaults: { foo: 1 }, callbacks: [{ url: URL_OK }] }, status: 400, code: 'validation_failed', says: /foo/ },
  // the callbacks array
  { name: 'no callbacks field', body: { label: 'x' }, status: 400, code: 'validation_failed', says: /callbacks/ },
  { name: 'an empty callbacks array', body: { callbacks: [] }, status: 400, code: 'validation_failed', says: /callbacks/ },
  { name: 'callbacks as an object', body: { callbacks: { url: URL_OK } }, status: 400, code: 'validation_failed', says: /callbacks/ },
  { name: 'callbacks of strings', body: { callbacks: [URL_OK] }, status: 400, code: 'validation_failed' },
  { name: 'a null callback', body: { callbacks: [null] }, status: 400, code: 'validation_failed' },
  {
    name: 'more callbacks than MAX_CALLBACKS_PER_BATCH',
    body: { callbacks: Array.from({ length: 6 }, () => ({ url: URL_OK })) },
    status: 413,
    code: 'payload_too_large',
    says: /at most 5 callbacks/,
  },
  {
    name: 'four good callbacks and a bad last one',
    body: { callbacks: [...Array.from({ length: 4 }, () => ({ url: URL_OK })), { url: 'nope' }] },
    status: 400,
    code: 'validation_failed',
    says: /callbacks\.4\.url/,
  },
  // sizes and depth
  { name: 'a body over MAX_CALLBACK_BODY_BYTES', body: one({ body: 'b'.repeat(1001) }), status: 413, code: 'payload_too_large', says: /1000 bytes/ },
  { name: 'a JSON body over MAX_CALLBACK_BODY_BYTES', body: one({ body: { s: 'é'.repeat(500) } }), status: 413, code: 'payload_too_large', says: /1000 bytes/ },
  { name: 'a request over MAX_REQUEST_BYTES', body: one({ body: 'x'.repeat(70 * 1024) }), status: 413, code: 'payload_too_large' },
  {
    name: 'a callback body nested 9 deep (MAX_JSON_DEPTH 8)',
    body: one({ body: nested(9) }),
    status: 400,
    code: 'validation_failed',
    says: /nested deeper than 8/,
  },
  {
    name: 'objects nested 10,000 deep (raw)',
    body: `{"callbacks":[{"url":"${URL_OK}","body":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}]}`,
    raw: true,
    status: 400,
    code: 'validation_failed',
    says: /nested deeper/,
  },
  {
    name: 'a deep unknown field (raw)',
    body: `{"callbacks":[{"url":"${URL_OK}"}],"x":${'['.repeat(5_000)}${']'.repeat(5_000)}}`,
    raw: true,
    status: 400,
    code: 'validation_failed',
    says: /nested deeper/,
  },
  {
    name: 'arrays nested 20,000 deep (raw)',
    body: `{"callbacks":[{"url":"${URL_OK}","body":${'['.repeat(20_000)}${']'.repeat(20_000)}}]}`,
    raw: true,
    status: 400,
    code: 'validation_failed',
    says: /nested deeper/,
  },
  // the document itself
  { name: 'malformed JSON', body: '{"callbacks": [', raw: true, status: 400, code: 'malformed_json' },
  { name: 'JSON with a trailing comma', body: `{"callbacks":[{"url":"${URL_OK}"},]}`, raw: true, status: 400, code: 'malformed_json' },
  { name: 'an empty JSON body', body: '', raw: true, status: 400, code: 'validation_failed' },
  { name: 'a JSON array as the document', body: [{ url: URL_OK }], status: 400, code: 'validation_failed' },
  { name: 'JSON null as the document', body: 'null', raw: true, status: 400, code: 'validation_failed' },
  { name: 'a JSON string as the document', body: '"callbacks"', raw: true, status: 400, code: 'validation_failed' },
  { name: 'a __proto__ key', body: `{"callbacks":[{"url":"${URL_OK}"}],"__proto__":{"admin":true}}`, raw: true, status: 400, code: 'malformed_json' },
  {
    name: 'a constructor.prototype key',
    body: `{"callbacks":[{"url":"${URL_OK}"}],"constructor":{"prototype":{"admin":true}}}`,
    raw: true,
    status: 400,
    code: 'malformed_json',
  },
  { name: 'a text/plain body', body: JSON.stringify(one()), raw: true, headers: { 'content-type': 'text/plain' }, status: 415, code: 'unsupported_media_type' },
  {
    name: 'a form body',
    body: 'callbacks=1',
    raw: true,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    status: 415,
    code: 'unsupported_media_type',
  },
  {
    name: 'an Idempotency-Key over 255 characters',
    body: one(),
    headers: { 'idempotency-key': 'k'.repeat(256) },
    status: 400,
    code: 'validation_failed',
    says: /Idempotency-Key/,
  },
];

describe(BatchController.name, () => {
  let service: TestService;
  let db: pg.Client;

  beforeAll(async () => {
    // ROLE=api: nothing here is ever sent anywhere.
    service = await startTestService({ role: 'api', ...LIMITS });
    db = await connect(service.databaseUrl);
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
  });

  async function stored(): Promise<{ batches: number; callbacks: number }> {
    const { rows } = await db.query('SELECT (SELECT count(*) FROM batch)::int AS batches, (SELECT count(*) FROM callback)::int AS callbacks');
    return rows[0];
  }

  function post(c: Pick<Case, 'body' | 'raw' | 'headers'>) {
    const headers = { 'content-type': 'application/json', ...c.headers };
    return service.api('/v1/batches', { method: 'POST', headers, body: c.raw ? (c.body as string) : JSON.stringify(c.body) });
  }

  it.each(CASES.map((c) => [c.name, c] as const))('should refuse %s with the error shape and store nothing', async (_name, c) => {
    const before = await stored();
    const res = await post(c);
    const body = (await res.json()) as Record<string, unknown>;
    expect({ status: res.status, code: body.code }).toEqual({ status: c.status, code: c.code });
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(body).toEqual(expect.objectContaining({ code: c.code, message: expect.any(String), requestId: expect.any(String) }));
    expect(Object.keys(body).every((k) => ['code', 'message', 'details', 'requestId'].includes(k))).toBe(true);
    if (c.says) expect(JSON.stringify(body)).toMatch(c.says);
    expect(await stored()).toEqual(before);
  });

  it('should accept the same shapes when they are valid, so the refusals above are about the breach', async () => {
    const before = await stored();
    const res = await post({
      body: {
        label: 'l'.repeat(200),
        defaults: { headers: manyHeaders(25, 'x-d'), timeoutMs: 60_000 },
        callbacks: [
          { url: URL_OK, headers: manyHeaders(25), body: 'b'.repeat(1000), method: 'PUT' },
          { url: URL_OK, body: { nul: 'a\u0000b' } },
          { url: `https://example.com/${'a'.repeat(2000)}`, body: nested(8), retryDelaysMs: [0], runAt: new Date().toISOString(), externalId: 'e' },
          ...Array.from({ length: 2 }, () => ({ url: URL_OK, headers: { 'x-a': 'v'.repeat(4096) } })),
        ],
      },
      headers: { 'idempotency-key': 'k'.repeat(255) },
    });
    expect(res.status).toBe(202);
    expect(await stored()).toEqual({ batches: before.batches + 1, callbacks: before.callbacks + 5 });
  });

  it("should lay a callback's header over its default of the same name whatever the case, and store one of each name", async () => {
    const res = await post({
      body: {
        defaults: { headers: { 'X-Over': 'default', 'X-Kept': 'default', ...manyHeaders(30, 'X-H') } },
        callbacks: [{ url: URL_OK, headers: { 'x-over': 'own', ...manyHeaders(30, 'x-h') }, body: { a: 1 } }],
      },
    });
    expect(res.status).toBe(202);
    const [{ id }] = ((await res.json()) as { callbacks: Array<{ id: string }> }).callbacks;
    const { rows } = await db.query('SELECT headers FROM callback WHERE id = $1', [id]);
    const names = Object.keys(rows[0].headers);
    expect(rows[0].headers).toMatchObject({ 'x-over': 'own', 'X-Kept': 'default', 'content-type': 'application/json' });
    expect(names).toHaveLength(33);
    expect(new Set(names.map((n) => n.toLowerCase())).size).toBe(names.length);
  });
});
