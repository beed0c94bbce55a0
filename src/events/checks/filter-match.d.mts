// Types of filter-match.mjs (a plain ES module run in the payload check threads) for its spec.
export function matchesFilter(filter: Record<string, unknown>, payload: unknown): boolean;
