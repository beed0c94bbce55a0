import { unstorableTextProblem } from '../common/validators.js';

/**
 * A receiver's filter on event payloads, in Convoy's and Outpost's shape (MongoDB's query
 * documents): an object whose entries must all hold. `"a.b.c": value` holds when the
 * value at that dotted path (a number part indexes an array: `items.0.sku`) equals
 * `value`; `"a.b.c": {"$op": operand, …}` applies operators, all of which must hold:
 * `$eq`, `$ne` (any JSON value, compared deeply; `$ne` also holds where the path is
 * missing), `$in`, `$nin` (an array), `$gt`, `$gte`, `$lt`, `$lte` (a number or a string,
 * met only by values of its type: `{"$gt": 5}` never holds for `"6"`), `$exists` (a
 * boolean). `$and`, `$or` (a non-empty array of filters) and `$not` (a filter) combine
 * filters. Mixing `$` keys and other keys in one object is an error; `{}` takes every
 * event. Checked here when stored, run off the event loop (checks/filter-match.mjs).
 */
export type Filter = Record<string, unknown>;

const COMPARISONS = ['$eq', '$ne', '$in', '$nin', '$gt', '$gte', '$lt', '$lte', '$exists'] as const;
const COMBINATORS = ['$and', '$or', '$not'] as const;
/** Combinators nest this deep at most. */
export const MAX_FILTER_DEPTH = 16;
/** A filter is at most this many bytes as JSON. */
export const MAX_FILTER_BYTES = 16_384;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isOperatorObject = (v: unknown): v is Record<string, unknown> =>
  isObject(v) && Object.keys(v).length > 0 && Object.keys(v).every((k) => k.startsWith('$'));

/** `filter.$or[1]['data.amount'].$gt`: where a problem is. */
const at = (where: string, key: string | number) =>
  typeof key === 'number' ? `${where}[${key}]` : key.startsWith('$') ? `${where}.${key}` : `${where}[${JSON.stringify(key)}]`;

/** Where the filter is wrong and how (`filter.$or[1]["data.amount"].$gt: takes a number or a string`), or undefined. */
export function filterProblem(filter: unknown, where = 'filter'): string | undefined {
  if (filter !== null && isObject(filter) && Buffer.byteLength(JSON.stringify(filter)) > MAX_FILTER_BYTES) {
    return `${where}: at most ${MAX_FILTER_BYTES} bytes as JSON`;
  }
  return problemIn(filter, where, 0) ?? unstorableTextProblem(where, filter);
}

function problemIn(filter: unknown, where: string, depth: number): string | undefined {
  if (!isObject(filter)) return `${where}: a filter is an object of paths and combinators`;
  if (depth > MAX_FILTER_DEPTH) return `${where}: filters nest at most ${MAX_FILTER_DEPTH} deep`;
  for (const [key, value] of Object.entries(filter)) {
    const here = at(where, key);
    if (key === '$and' || key === '$or') {
      if (!Array.isArray(value) || value.length === 0) return `${here}: takes a non-empty array of filters`;
      for (const [i, f] of value.entries()) {
        const p = problemIn(f, at(here, i), depth + 1);
        if (p) return p;
      }
    } else if (key === '$not') {
      const p = problemIn(value, here, depth + 1);
      if (p) return p;
    } else if (key.startsWith('$')) {
      return `${here}: unknown combinator (${COMBINATORS.join(', ')}; comparisons go under a path)`;
    } else {
      const p = pathProblem(key) ?? conditionProblem(value);
      if (p) return `${here}${p.startsWith('.') ? '' : ': '}${p}`;
    }
  }
  return undefined;
}

function pathProblem(path: string): string | undefined {
  if (path.length > 256 || path.split('.').some((part) => part === '')) return 'a path is dot-separated names, at most 256 characters';
  return undefined;
}

function conditionProblem(condition: unknown): string | undefined {
  if (!isOperatorObject(condition)) {
    if (isObject(condition) && Object.keys(condition).some((k) => k.startsWith('$'))) {
      return 'mixes operators ($…) with plain keys; compare an object with {"$eq": {…}}';
    }
    return undefined;
  }
  for (const [op, operand] of Object.entries(condition)) {
    const problem = operandProblem(op, operand);
    if (problem) return `.${op}: ${problem}`;
  }
  return undefined;
}

function operandProblem(op: string, operand: unknown): string | undefined {
  switch (op) {
    case '$eq':
    case '$ne':
      return undefined;
    case '$in':
    case '$nin':
      return Array.isArray(operand) ? undefined : 'takes an array of values';
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte':
      return typeof operand === 'number' || typeof operand === 'string' ? undefined : 'takes a number or a string';
    case '$exists':
      return typeof operand === 'boolean' ? undefined : 'takes true or false';
    default:
      return `unknown operator (${COMPARISONS.join(', ')})`;
  }
}
