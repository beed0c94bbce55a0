import { Injectable } from '@nestjs/common';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { AppError } from '../common/app.error.js';
import { schemaPatternEngine, UnsupportedPattern } from './schema-pattern.engine.js';

/** Compiled schemas kept; the least recently used goes first beyond this. */
const CACHED_SCHEMAS = 500;

export interface SchemaProblem {
  /** JSON Pointer into the payload (`/order/amount`; empty for the payload itself). */
  path: string;
  message: string;
}

/**
 * Event types' JSON Schemas (draft 2020-12, ajv's 2020 build), each compiled once
 * and kept by its text: a type's schema is compiled when it is PUT (an invalid one
 * is a 400) and at the first publish of this process, then reused until it changes
 * (another text, another entry). Compiled schemas are forgotten least recently used
 * first, beyond 500, and removed from ajv's own cache with them, so the process
 * holds at most that many however many types keys make.
 *
 * Schemas come from API keys, so compiling stays closed: no remote `$ref` is loaded
 * (a `$ref` outside the schema fails it), schemas are not registered by `$id`
 * (`addUsedSchema: false`: two keys' schemas with one `$id` never meet), and the
 * schema's size is bounded by the DTO (EventTypeService). Unknown keywords are allowed,
 * as JSON Schema allows them; known ones are checked against the meta-schema. Patterns
 * run on RE2, in time linear in the payload (schema-pattern.engine.ts): a pattern built
 * to backtrack cannot hold the API.
 */
@Injectable()
export class PayloadSchemaCache {
  private readonly ajv = new Ajv2020({
    strict: false,
    addUsedSchema: false,
    allErrors: false,
    logger: false,
    code: { regExp: schemaPatternEngine },
  });
  private readonly compiled = new Map<string, { schema: object; validate: ValidateFunction }>();

  constructor() {
    addFormats.default(this.ajv);
  }

  /** Compiles (or finds) the schema; a schema ajv refuses is a 400 saying why. */
  validatorOf(schema: unknown): ValidateFunction {
    const text = JSON.stringify(schema);
    const hit = this.compiled.get(text);
    if (hit) {
      this.compiled.delete(text);
      this.compiled.set(text, hit);
      return hit.validate;
    }
    // a copy of its own, so the key in ajv's cache is the object this entry removes
    const own = JSON.parse(text) as object;
    let validate: ValidateFunction;
    try {
      validate = this.ajv.compile(own);
    } catch (error) {
      this.ajv.removeSchema(own);
      if (error instanceof UnsupportedPattern) throw new AppError('validation_failed', `schema: ${error.message}`);
      throw new AppError('validation_failed', `schema is not a valid JSON Schema (draft 2020-12): ${(error as Error).message}`);
    }
    this.compiled.set(text, { schema: own, validate });
    if (this.compiled.size > CACHED_SCHEMAS) {
      const [oldest, entry] = this.compiled.entries().next().value!;
      this.compiled.delete(oldest);
      this.ajv.removeSchema(entry.schema);
    }
    return validate;
  }

  /** The payload's first problem under the schema, or undefined when it passes. */
  problemOf(schema: unknown, payload: unknown): SchemaProblem | undefined {
    const validate = this.validatorOf(schema);
    if (validate(payload)) return undefined;
    const [e] = validate.errors as ErrorObject[];
    return { path: e.instancePath, message: `${e.message ?? 'does not match'}${paramsOf(e)}` };
  }

  /** How many compiled schemas are held (tests). */
  get size(): number {
    return this.compiled.size;
  }
}

/** The detail ajv keeps out of its message: which property is missing or not allowed, which values are. */
function paramsOf(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  if (typeof p.additionalProperty === 'string') return `: ${p.additionalProperty}`;
  if (Array.isArray(p.allowedValues)) return `: ${JSON.stringify(p.allowedValues)}`;
  return '';
}
