/**
 * Header maps laid over one another, later ones winning, with names compared as HTTP
 * compares them: whatever their case. A name keeps the spelling of the layer that set
 * its value, and each name is there once, so a callback's `x-token` replaces its
 * batch default's `X-Token` instead of going out beside it.
 */
export function layerHeaders(...layers: Array<Readonly<Record<string, string>> | null | undefined>): Record<string, string> {
  const byLower = new Map<string, [string, string]>();
  for (const layer of layers) {
    if (!layer) continue;
    for (const [name, value] of Object.entries(layer)) {
      const lower = name.toLowerCase();
      byLower.delete(lower);
      byLower.set(lower, [name, value]);
    }
  }
  return Object.fromEntries(byLower.values());
}

/** The first header name of `names` that another one repeats whatever its case, with that other spelling; else undefined. */
export function repeatedHeader(names: Iterable<string>): [string, string] | undefined {
  const seen = new Map<string, string>();
  for (const name of names) {
    const lower = name.toLowerCase();
    const first = seen.get(lower);
    if (first !== undefined) return [first, name];
    seen.set(lower, name);
  }
  return undefined;
}

/**
 * A copy of `headers` without its Authorization header, whatever its case: the one a
 * receiver's `auth` replaces when its call is sent (dispatch/auth/authorized.sender.ts),
 * so a request shown or recorded as sent does not show one that did not go.
 */
export function withoutAuthorization(headers: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => name.toLowerCase() !== 'authorization'));
}
