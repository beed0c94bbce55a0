/**
 * Whether an event's payload passes a receiver's filter (event-filter.policy.ts says
 * what a filter is and checks one when it is stored; this is only ever given valid
 * ones). Run in the payload check threads (payload-check.worker.mjs) with the
 * publish's budget: a filter costs time linear in its size, but a publish evaluates
 * one per subscriber, up to EVENT_MAX_DELIVERIES of them.
 */

const isObject = (/** @type {unknown} */ v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const isOperatorObject = (/** @type {unknown} */ v) => isObject(v) && Object.keys(v).length > 0 && Object.keys(v).every((k) => k.startsWith('$'));

/** @param {Record<string, unknown>} filter @param {unknown} payload @returns {boolean} */
export function matchesFilter(filter, payload) {
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and') {
      if (!value.every((f) => matchesFilter(f, payload))) return false;
    } else if (key === '$or') {
      if (!value.some((f) => matchesFilter(f, payload))) return false;
    } else if (key === '$not') {
      if (matchesFilter(value, payload)) return false;
    } else {
      const found = lookup(payload, key);
      const ops = isOperatorObject(value) ? Object.entries(value) : [['$eq', value]];
      if (!ops.every(([op, operand]) => holds(op, operand, found))) return false;
    }
  }
  return true;
}

function lookup(/** @type {unknown} */ payload, /** @type {string} */ path) {
  let node = payload;
  for (const part of path.split('.')) {
    if (Array.isArray(node) && /^(0|[1-9]\d*)$/.test(part) && Number(part) < node.length) node = node[Number(part)];
    else if (isObject(node) && Object.hasOwn(node, part)) node = node[part];
    else return { exists: false };
  }
  return { exists: true, value: node };
}

function holds(/** @type {string} */ op, /** @type {unknown} */ operand, /** @type {{exists: boolean, value?: unknown}} */ found) {
  if (op === '$exists') return found.exists === operand;
  if (op === '$ne') return !found.exists || !deepEqual(found.value, operand);
  if (op === '$nin') return !found.exists || !operand.some((o) => deepEqual(found.value, o));
  if (!found.exists) return false;
  const v = found.value;
  switch (op) {
    case '$eq':
      return deepEqual(v, operand);
    case '$in':
      return operand.some((o) => deepEqual(v, o));
    default: {
      if (typeof v !== typeof operand || (typeof v !== 'number' && typeof v !== 'string')) return false;
      return op === '$gt' ? v > operand : op === '$gte' ? v >= operand : op === '$lt' ? v < operand : v <= operand;
    }
  }
}

function deepEqual(/** @type {unknown} */ a, /** @type {unknown} */ b) {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}
