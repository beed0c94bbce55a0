import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { ModulesContainer } from '@nestjs/core';
import { compileErrors, validate } from '@readme/openapi-parser';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientSchemaSource, documentSource } from '../../src/client/schema.generator.js';
import { OpenApiValidator, type OpenApiDocument } from '../support/openapi-validator.js';
import { startTestService, type TestService } from '../support/service.js';

/** @nestjs/swagger's metadata keys (its constants module is not exported). */
const EXCLUDE_CONTROLLER = 'swagger/apiExcludeController';
const EXCLUDE_ENDPOINT = 'swagger/apiExcludeEndpoint';

type Schema = { $ref?: string; type?: string; properties?: Record<string, unknown> };
type Operation = { summary?: string; security?: unknown[]; responses?: Record<string, { content?: Record<string, { schema?: Schema }> }> };
type Doc = {
  openapi: string;
  servers?: Array<{ url: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};

/** Every operation as `METHOD /path` with its responses. */
const operations = (doc: Doc) =>
  Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op })));

/** The schemas of the operation's answers with a status matching `status` (e.g. /^2/). */
const schemasOf = (op: Operation, status: RegExp) =>
  Object.entries(op.responses ?? {})
    .filter(([code]) => status.test(code))
    .flatMap(([, r]) => Object.values(r.content ?? {}).map((c) => c.schema))
    .filter((s): s is Schema => s !== undefined);

/** Every route the Nest app registered, as `METHOD /path/{param}`, minus those excluded from the docs on purpose. */
function registeredRoutes(service: TestService): { documented: string[]; excluded: string[] } {
  const documented: string[] = [];
  const excluded: string[] = [];
  for (const module of service.app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const cls = wrapper.metatype as (new (...args: never[]) => unknown) | undefined;
      if (!cls) continue;
      const base = [Reflect.getMetadata(PATH_METADATA, cls) ?? ''].flat()[0] as string;
      const hiddenClass = Reflect.getMetadata(EXCLUDE_CONTROLLER, cls)?.[0] === true;
      for (const name of Object.getOwnPropertyNames(cls.prototype)) {
        const handler = cls.prototype[name];
        const method = typeof handler === 'function' ? Reflect.getMetadata(METHOD_METADATA, handler) : undefined;
        if (method === undefined) continue;
        const path = [Reflect.getMetadata(PATH_METADATA, handler) ?? ''].flat()[0] as string;
        const full = `/${[base, path].join('/')}`
          .replace(/\/+/g, '/')
          .replace(/(.)\/$/, '$1')
          .replace(/:(\w+)/g, '{$1}');
        const route = `${RequestMethod[method]} ${full}`;
        const hidden = hiddenClass || Reflect.getMetadata(EXCLUDE_ENDPOINT, handler)?.disable === true;
        (hidden ? excluded : documented).push(route);
      }
    }
  }
  return { documented: documented.sort(), excluded: excluded.sort() };
}

describe('OpenAPI document', () => {
  let service: TestService;
  let doc: Doc;

  beforeAll(async () => {
    service = await startTestService({ role: 'api' });
    const res = await service.api('/docs/openapi.json', { key: null });
    expect(res.status).toBe(200);
    doc = (await res.json()) as Doc;
  });
  afterAll(async () => {
    await service?.dispose();
  });

  it('should be a valid OpenAPI 3 document', async () => {
    expect(doc.openapi).toMatch(/^3\./);
    const result = await validate(structuredClone(doc) as never);
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
  });

  it('should document every registered route', () => {
    const { documented } = registeredRoutes(service);
    const inDoc = Object.entries(doc.paths)
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
    expect(documented.length).toBeGreaterThan(15);
    expect(documented.filter((r) => !inDoc.includes(r))).toEqual([]);
    expect(inDoc.filter((r) => !documented.includes(r))).toEqual([]);
  });

  it('should include the observability routes and the latency history response shape', () => {
    for (const path of ['/v1/history/latency', '/metrics', '/health/live', '/health/ready', '/v1/batches/{id}/sequence']) {
      expect(Object.keys(doc.paths)).toContain(path);
    }
    const { schemas } = doc.components;
    expect(Object.keys(schemas.LatencyHistoryDto.properties!).sort()).toEqual(['bucket', 'from', 'items', 'to']);
    expect(Object.keys(schemas.LatencyBucketDto.properties!).sort()).toEqual(['count', 'failed', 'max', 'ok', 'p50', 'p90', 'p99', 'start']);
  });

  it('should be the document the client in src/client/ was generated from (else: npm run client:generate)', async () => {
    const committed = (name: string) => readFileSync(new URL(`../../src/client/${name}`, import.meta.url), 'utf8');
    expect(documentSource(doc), 'src/client/openapi.json differs from the served document').toBe(committed('openapi.json'));
    expect(await clientSchemaSource(doc), 'src/client/api.schema.ts differs from what openapi-typescript makes of the served document').toBe(
      committed('api.schema.ts'),
    );
  });

  it('should give every operation a 2xx response with a schema', () => {
    const ops = operations(doc);
    expect(ops.length).toBeGreaterThan(15);
    expect(ops.filter(({ op }) => schemasOf(op, /^2\d\d$/).length === 0).map((o) => o.name)).toEqual([]);
  });

  it('should give every operation error responses with the error body {code, message, details?, requestId}', () => {
    expect(Object.keys(doc.components.schemas.ErrorDto.properties!).sort()).toEqual(['code', 'details', 'message', 'requestId']);
    const withoutErrors = operations(doc).filter(({ op }) => {
      const errors = schemasOf(op, /^[45]\d\d$/);
      return errors.length === 0 || errors.some((s) => s.$ref !== '#/components/schemas/ErrorDto');
    });
    expect(withoutErrors.map((o) => o.name)).toEqual([]);
  });

  it('should document 401 on every route that takes a key, and 404 on every route with an id', () => {
    const ops = operations(doc).filter(({ name }) => name.includes(' /v1/'));
    expect(ops.filter(({ op }) => !op.responses?.['401']).map((o) => o.name)).toEqual([]);
    expect(ops.filter(({ name, op }) => name.includes('{id}') && !op.responses?.['404']).map((o) => o.name)).toEqual([]);
  });

  it('should document query parameters of the listing routes', () => {
    const names = (path: string, method = 'get') =>
      ((doc.paths[path][method] as { parameters?: Array<{ name: string; in: string }> }).parameters ?? [])
        .filter((p) => p.in === 'query')
        .map((p) => p.name)
        .sort();
    expect(names('/v1/callbacks')).toEqual(['cursor', 'event', 'host', 'limit', 'receiver', 'since', 'status']);
    expect(names('/v1/events')).toEqual(['cursor', 'limit', 'since', 'type']);
    expect(names('/v1/event-types')).toEqual(['cursor', 'limit']);
    expect(names('/v1/batches/{id}/callbacks')).toEqual(['cursor', 'limit', 'status']);
    expect(names('/v1/hosts')).toEqual(['cursor', 'limit', 'since']);
    expect(names('/v1/receivers')).toEqual(['cursor', 'limit', 'sort']);
    expect(names('/v1/batches/{id}/retry', 'post')).toEqual(['status']);
  });

  it('should give every operation a summary and its security, public ones `security: []`, and name a server', () => {
    const ops = operations(doc);
    expect(ops.filter(({ op }) => !op.summary).map((o) => o.name)).toEqual([]);
    expect(ops.filter(({ op }) => op.security === undefined).map((o) => o.name)).toEqual([]);
    expect(ops.filter(({ name, op }) => name.includes(' /v1/') && JSON.stringify(op.security) !== '[{"bearer":[]}]').map((o) => o.name)).toEqual([]);
    expect(doc.paths['/health/live'].get.security).toEqual([]);
    expect(doc.servers?.length).toBeGreaterThan(0);
  });

  it('should show no example a reader could put to use as a secret: each whsec_ example is refused as a receiver secret and an operator endpoint secret', async () => {
    const examples = new Set<string>();
    const walk = (node: unknown): void => {
      if (typeof node === 'string' && /whsec_/.test(node)) examples.add(node);
      else if (node !== null && typeof node === 'object') Object.values(node).forEach(walk);
    };
    walk(doc);
    expect(examples.size).toBeGreaterThan(0);
    for (const secret of examples) {
      if (!/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(secret)) continue;
      const receiver = await service.api('/v1/receivers/example-secret', { method: 'PUT', json: { url: 'http://127.0.0.1:9/x', secret } });
      expect([secret, receiver.status]).toEqual([secret, 400]);
      const operator = await service.api('/v1/operator-endpoint', { method: 'PUT', json: { url: 'http://127.0.0.1:9/ops', secret } });
      expect([secret, operator.status]).toEqual([secret, 400]);
    }
  });

  /** The validator every answer of service.api and service.client goes through (test/support/openapi-validator.ts), shown its teeth. */
  describe(OpenApiValidator.name, () => {
    /** The served document, changed by `edit`, as a validator. */
    const validatorOf = (edit: (d: Doc) => void) => {
      const copy = structuredClone(doc);
      edit(copy);
      return new OpenApiValidator(copy as unknown as OpenApiDocument);
    };
    const problemsOf = async (validator: OpenApiValidator, method: string, path: string, init: Parameters<TestService['api']>[1] = {}) => {
      const res = await service.api(path, { ...init, method });
      return validator.problems(method, new URL(res.url), res.status, res.headers.get('content-type'), await res.text());
    };

    it("should reject `waiting: null` where the document says object (regression: OpenAPI 3.0's nullable beside allOf allowed no null)", async () => {
      const res = await service.api('/v1/batches', { method: 'POST', json: { callbacks: [{ url: 'http://127.0.0.1:9/never' }] } });
      expect(res.status).toBe(202);
      const was30 = validatorOf((d) => {
        (d.components.schemas.CallbackDto.properties as Record<string, unknown>).waiting = {
          type: 'object',
          nullable: true,
          allOf: [{ $ref: '#/components/schemas/WaitingDto' }],
        };
      });
      const problems = await problemsOf(was30, 'GET', '/v1/callbacks?status=pending');
      expect(problems.join('\n')).toMatch(/GET \/v1\/callbacks → 200 application\/json: body\/items\/0\/waiting must be object/);
      expect(
        await problemsOf(
          validatorOf(() => undefined),
          'GET',
          '/v1/callbacks?status=pending',
        ),
      ).toEqual([]);
    });

    it('should reject a status the operation does not document, and an error body unlike the documented one', async () => {
      const missing = `/v1/batches/${'0'.repeat(8)}-0000-7000-8000-${'0'.repeat(12)}`;
      const no404 = validatorOf((d) => delete d.paths['/v1/batches/{id}'].get.responses!['404']);
      expect((await problemsOf(no404, 'GET', missing)).join()).toMatch(/status 404 is not documented/);
      const otherError = validatorOf((d) => (d.components.schemas.ErrorDto.properties!.code = { type: 'integer' }));
      expect((await problemsOf(otherError, 'GET', missing)).join()).toMatch(/body\/code must be integer/);
      expect(
        await problemsOf(
          validatorOf(() => undefined),
          'GET',
          missing,
        ),
      ).toEqual([]);
    });

    it('should reject a content type the answer does not document (the text/plain sequence diagram, the JSON error of /metrics)', async () => {
      const { id } = await service.apiJson('/v1/batches', { method: 'POST', json: { callbacks: [{ url: 'http://127.0.0.1:9/never' }] } });
      const noText = validatorOf((d) => delete d.paths['/v1/batches/{id}/sequence'].get.responses!['200'].content!['text/plain']);
      expect((await problemsOf(noText, 'GET', `/v1/batches/${id}/sequence`)).join()).toMatch(/content type "text\/plain; charset=utf-8" is not documented/);
      expect(
        await problemsOf(
          validatorOf(() => undefined),
          'GET',
          `/v1/batches/${id}/sequence`,
        ),
      ).toEqual([]);
      const textMetrics = validatorOf((d) => {
        d.paths['/metrics'].get.responses!['200'].content = { 'application/json': { schema: { type: 'object' } } };
      });
      expect((await problemsOf(textMetrics, 'GET', '/metrics', { key: null })).join()).toMatch(/content type "text\/plain.*" is not documented/);
    });

    it('should reject a /v1 route the document does not have, but not a route that does not exist, nor pages outside the API', async () => {
      const noHosts = validatorOf((d) => delete d.paths['/v1/hosts']);
      expect((await problemsOf(noHosts, 'GET', '/v1/hosts')).join()).toMatch(/GET \/v1\/hosts is not in the document \(answered 200\)/);
      const full = validatorOf(() => undefined);
      expect(await problemsOf(full, 'GET', '/v1/no-such-route')).toEqual([]);
      expect(full.problems('GET', new URL('http://127.0.0.1/v1/no-such-route'), 404, 'application/json', '{"error":"Not Found"}').join()).toMatch(
        /no such route.*must have required property 'code'/,
      );
      expect(await problemsOf(full, 'GET', '/dashboard', { key: null })).toEqual([]);
    });
  });
});
