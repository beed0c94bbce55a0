import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { schemaPatternEngine, UnsupportedPattern } from './schema-pattern.engine.mjs';

/** Compiled schemas kept; the least recently used goes first beyond this. */
export const CACHED_SCHEMAS = 500;

/** A schema that cannot be compiled: the message says why (the API answers it as a 400). */
export class SchemaRefused extends Error {}

/**
 * Event types' JSON Schemas (draft 2020-12, ajv's 2020 build), compiled when a type is
 * PUT (an invalid one is a 400) and at the first publish a thread sees, then kept by
 * their text and reused until it changes; past CACHED_SCHEMAS the least recently used go,
 * from ajv's own cache too. Schemas come from API keys, so compiling stays closed: no
 * remote `$ref` is loaded (a `$ref` outside the schema fails it), no schema is registered
 * by `$id` (`addUsedSchema: false`: two keys' schemas with one `$id` never meet), and the
 * API bounds a schema's size (EventTypeService). Unknown keywords are allowed, as JSON
 * Schema allows them; known ones are checked against the meta-schema; patterns run on RE2
 * (schema-pattern.engine.mjs). Its time is not bounded (`uniqueItems` compares every
 * pair), hence a worker thread with a budget per check (PayloadCheckPool).
 */
export class PayloadSchemas {
  ajv = new Ajv2020({ strict: false, addUsedSchema: false, allErrors: false, logger: false, code: { regExp: schemaPatternEngine } });
  /** @type {Map<string, { schema: object, validate: import('ajv').ValidateFunction }>} */
  compiled = new Map();

  constructor() {
    (addFormats.default ?? addFormats)(this.ajv);
  }

  /** Compiles (or finds) the schema given as JSON text; a schema ajv refuses is a SchemaRefused saying why. */
  validatorOf(/** @type {string} */ text) {
    const hit = this.compiled.get(text);
    if (hit) {
      this.compiled.delete(text);
      this.compiled.set(text, hit);
      return hit.validate;
    }
    // an object of its own, so the key in ajv's cache is the object this entry removes
    const own = JSON.parse(text);
    let validate;
    try {
      validate = this.ajv.compile(own);
    } catch (error) {
      this.ajv.removeSchema(own);
      if (error instanceof UnsupportedPattern) throw new SchemaRefused(`schema: ${error.message}`);
      throw new SchemaRefused(`schema is not a valid JSON Schema (draft 2020-12): ${error.message}`);
    }
    this.compiled.set(text, { schema: own, validate });
    if (this.compiled.size > CACHED_SCHEMAS) {
      const [oldest, entry] = this.compiled.entries().next().value;
      this.compiled.delete(oldest);
      this.ajv.removeSchema(entry.schema);
    }
    return validate;
  }

  /** The payload's first problem under the schema (JSON text), `{path, message}`, or undefined when it passes. */
  problemOf(/** @type {string} */ schemaText, /** @type {unknown} */ payload) {
    const validate = this.validatorOf(schemaText);
    if (validate(payload)) return undefined;
    const [e] = validate.errors;
    return { path: e.instancePath, message: `${e.message ?? 'does not match'}${paramsOf(e)}` };
  }

  /** How many compiled schemas are held (tests). */
  get size() {
    return this.compiled.size;
  }
}

/** The detail ajv keeps out of its message: which property is missing or not allowed, which values are. */
function paramsOf(/** @type {import('ajv').ErrorObject} */ e) {
  const p = e.params;
  if (typeof p.additionalProperty === 'string') return `: ${p.additionalProperty}`;
  if (Array.isArray(p.allowedValues)) return `: ${JSON.stringify(p.allowedValues)}`;
  return '';
}
