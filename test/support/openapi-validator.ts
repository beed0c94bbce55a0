import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';

/**
 * Holds every answer the tests get through `service.api`, `service.client`
 * (test/support/service.ts) and `call` (test/support/process.ts) to the OpenAPI
 * document the service serves at /docs/openapi.json: its status is one the operation
 * documents, its content type one that status documents, and its body valid against
 * that schema (ajv, JSON Schema 2020-12: the dialect of OpenAPI 3.1). Errors and
 * non-JSON answers alike: a 404's body must be the error body, a sequence diagram
 * `text/plain`. A /v1 route the document does not know fails too, but for a 404 or a
 * 400 with the error body (the answers of a route that does not exist); pages outside
 * /v1 that the document leaves out (dashboard, /docs) are not checked.
 *
 * One validator per document text, kept for the process; each answer's schema is
 * compiled the first time it is met, so a test file pays for a handful of compiles.
 */
export class OpenApiValidator {
  /**
   * Strict (an unknown keyword or format is an error), but schemas are not checked
   * against the meta-schema: the document is (test/api/openapi.test.ts, npm run
   * lint:openapi), and compiling the meta-schema cost each test file ~50 ms.
   */
  private readonly ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true, validateSchema: false });
  private readonly compiled = new Map<string, ValidateFunction>();
  private readonly operations: Operation[];

  constructor(document: OpenApiDocument) {
    formats.default(this.ajv);
    // OpenAPI's own formats, which ajv-formats does not know, and its annotation keywords.
    for (const name of ['int32', 'int64']) this.ajv.addFormat(name, { type: 'number', validate: Number.isInteger });
    for (const name of ['float', 'double']) this.ajv.addFormat(name, { type: 'number', validate: () => true });
    for (const name of ['byte', 'binary', 'password']) this.ajv.addFormat(name, () => true);
    this.ajv.addVocabulary(['example', 'xml', 'externalDocs', 'discriminator']);
    // One schema per component, so an answer's validator compiles only the components it uses.
    for (const [name, schema] of Object.entries(document.components?.schemas ?? {})) this.ajv.addSchema({ ...rebase(schema), $id: `${COMPONENT}${name}` });
    this.operations = Object.entries(document.paths)
      .flatMap(([template, ops]) =>
        Object.entries(ops)
          .filter(([method]) => METHODS.has(method))
          .map(([method, op]) => ({ method: method.toUpperCase(), template, ...route(template), responses: op.responses ?? {} })),
      )
      .sort((a, b) => b.literals - a.literals || b.template.length - a.template.length);
  }

  /** What is wrong with this answer by the document: nothing (empty) when it matches. */
  problems(method: string, url: URL, status: number, contentType: string | null, body: string): string[] {
    const op = this.operations.find((o) => o.method === method && o.pattern.test(url.pathname));
    if (!op) {
      if (!url.pathname.startsWith('/v1/') && url.pathname !== '/v1') return [];
      // A route that does not exist answers 404 (or 400, when its body is already bad; 401 or
      // 429 without a working key, checked before the route): still the error body.
      if (![400, 401, 404, 429].includes(status)) return [`${method} ${url.pathname} is not in the document (answered ${status})`];
      return this.bodyProblems(`${method} ${url.pathname} (no such route) → ${status}`, 'error', { $ref: '#/components/schemas/ErrorDto' }, body);
    }
    const name = `${method} ${op.template} → ${status}`;
    const response = op.responses[String(status)] ?? op.responses[`${Math.floor(status / 100)}XX`] ?? op.responses.default;
    if (!response) return [`${name}: status ${status} is not documented (documented: ${Object.keys(op.responses).join(', ')})`];
    const content = response.content ?? {};
    const type = contentType?.split(';')[0].trim().toLowerCase() ?? '';
    if (Object.keys(content).length === 0) return body === '' ? [] : [`${name}: documented without a body, answered ${type || 'one'}`];
    const media = content[type];
    if (!media) return [`${name}: content type ${JSON.stringify(contentType)} is not documented (documented: ${Object.keys(content).join(', ')})`];
    if (type === 'text/event-stream' || method === 'HEAD' || !media.schema) return [];
    const json = type === 'application/json' || type.endsWith('+json');
    return this.bodyProblems(`${name} ${type}`, `${method} ${op.template} ${status} ${type}`, media.schema, body, json);
  }

  private bodyProblems(name: string, key: string, schema: object, body: string, json = true): string[] {
    let value: unknown = body;
    if (json) {
      try {
        value = JSON.parse(body);
      } catch {
        return [`${name}: body is not JSON: ${body.slice(0, 200)}`];
      }
    }
    let validate = this.compiled.get(key);
    if (!validate) {
      validate = this.ajv.compile(rebase(schema));
      this.compiled.set(key, validate);
    }
    if (validate(value)) return [];
    return [`${name}: ${this.ajv.errorsText(validate.errors, { dataVar: 'body', separator: '; ' })} in ${body.slice(0, 500)}`];
  }
}

type Schema = object;
interface OpenApiResponse {
  content?: Record<string, { schema?: Schema }>;
}
export interface OpenApiDocument {
  paths: Record<string, Record<string, { responses?: Record<string, OpenApiResponse> }>>;
  components?: { schemas?: Record<string, Schema> };
}
interface Operation {
  method: string;
  template: string;
  pattern: RegExp;
  literals: number;
  responses: Record<string, OpenApiResponse>;
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']);
/** The `$id` prefix of the components' schemas in ajv. */
const COMPONENT = 'urn:openapi:components:schemas:';

/** `/v1/batches/{id}/callbacks` as a pattern over a request path, with its count of literal segments (the more, the more specific). */
function route(template: string): { pattern: RegExp; literals: number } {
  const parts = template.split('/').filter(Boolean);
  const pattern = parts.map((p) => (/^\{.+\}$/.test(p) ? '[^/]+' : p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/');
  // No trailing slash: the service's routes do not take one (`/v1/batches/` is a 404).
  return { pattern: new RegExp(`^/${pattern}$`), literals: parts.filter((p) => !p.startsWith('{')).length };
}

/** A copy of `schema` whose `#/components/schemas/X` references name the component's own schema in ajv. */
function rebase<T>(schema: T): T {
  return JSON.parse(JSON.stringify(schema), (key, value: unknown) =>
    key === '$ref' && typeof value === 'string' ? value.replace('#/components/schemas/', COMPONENT) : value,
  ) as T;
}

const byDocument = new Map<string, OpenApiValidator>();
const byService = new Map<string, Promise<OpenApiValidator>>();

/** The validator of the document the service at `baseUrl` serves: fetched once per service, compiled once per document text. */
export function servedValidator(baseUrl: string): Promise<OpenApiValidator> {
  let validator = byService.get(baseUrl);
  if (!validator) {
    validator = fetchValidator(baseUrl);
    byService.set(baseUrl, validator);
    // A failed fetch is not kept: the next answer tries again.
    validator.catch(() => byService.delete(baseUrl));
  }
  return validator;
}

async function fetchValidator(baseUrl: string): Promise<OpenApiValidator> {
  const res = await fetch(`${baseUrl}/docs/openapi.json`);
  if (!res.ok) throw new Error(`GET /docs/openapi.json answered ${res.status}`);
  const text = await res.text();
  let validator = byDocument.get(text);
  if (!validator) {
    validator = new OpenApiValidator(JSON.parse(text) as OpenApiDocument);
    byDocument.set(text, validator);
  }
  return validator;
}

/**
 * fetch, and the answer checked against the document the service at `baseUrl` serves
 * (`checkResponse`). The document is fetched first: a request may be the service's last
 * (a test whose callback kills its worker).
 */
export async function checkedFetch(baseUrl: string, input: Request | string | URL, init?: RequestInit): Promise<Response> {
  const validator = await servedValidator(baseUrl);
  const res = await fetch(input, init);
  await checkResponse(validator, init?.method ?? (input instanceof Request ? input.method : 'GET'), res);
  return res;
}

/** Throws, failing the test that made the request, when `res` is not what the document says. Reads a clone: `res` stays unread. */
export async function checkResponse(validator: OpenApiValidator, method: string, res: Response): Promise<void> {
  const type = res.headers.get('content-type');
  const body = type?.startsWith('text/event-stream') ? '' : await res.clone().text();
  const problems = validator.problems(method.toUpperCase(), new URL(res.url), res.status, type, body);
  if (problems.length > 0) throw new Error(`the answer contradicts the OpenAPI document: ${problems.join('\n')}`);
}
