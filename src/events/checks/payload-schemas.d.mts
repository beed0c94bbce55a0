// Types of payload-schemas.mjs (a plain ES module run in the payload check threads) for its spec.
import type { ValidateFunction } from 'ajv';
export const CACHED_SCHEMAS: number;
export class SchemaRefused extends Error {}
export class PayloadSchemas {
  validatorOf(text: string): ValidateFunction;
  problemOf(schemaText: string, payload: unknown): { path: string; message: string } | undefined;
  get size(): number;
}
