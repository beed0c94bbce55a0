// Types of ids.js (a plain ES module served to the browser as is) for its spec.
export const MIN_TAIL_DIGITS: number;
export function shortIds(ids: string[]): Map<string, string>;
