/**
 * Event type names and the subscriptions that name them. A name is 1 to 128
 * characters of `a-z 0-9 _ -` in dot-separated parts (`order.paid`); a subscription
 * is a name or `prefix.*`, which takes every type under that prefix, at any depth
 * (`order.*` takes `order.paid` and `order.refund.failed`, not `order` itself).
 */
const NAME = /^[a-z0-9_-]+(?:\.[a-z0-9_-]+)*$/;
export const MAX_TYPE_NAME_LENGTH = 128;

export function typeNameProblem(name: unknown): string | undefined {
  return typeof name === 'string' && name.length <= MAX_TYPE_NAME_LENGTH && NAME.test(name)
    ? undefined
    : 'an event type name is 1 to 128 characters of a-z 0-9 _ - in parts separated by dots (order.paid)';
}

/** A receiver subscribes to this many patterns at most. */
export const MAX_SUBSCRIPTIONS = 256;

/** Why a subscription pattern is not one (a type name, or a name followed by `.*`), or undefined. */
export function patternProblem(pattern: unknown): string | undefined {
  if (typeof pattern !== 'string') return 'must be a string';
  const name = pattern.endsWith('.*') ? pattern.slice(0, -2) : pattern;
  return typeNameProblem(name) === undefined && pattern.length <= MAX_TYPE_NAME_LENGTH
    ? undefined
    : 'must be an event type name (order.paid) or a prefix followed by .* (order.*), at most 128 characters';
}

/**
 * The patterns an event of `type` is taken by: the name itself and each of its
 * prefixes with `.*` (`a.b.c`: `a.b.c`, `a.b.*`, `a.*`). The publish looks these up
 * in event_subscription's primary key.
 */
export function patternsOf(type: string): string[] {
  const parts = type.split('.');
  const patterns = [type];
  for (let n = parts.length - 1; n >= 1; n--) patterns.push(`${parts.slice(0, n).join('.')}.*`);
  return patterns;
}
