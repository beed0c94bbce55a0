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
