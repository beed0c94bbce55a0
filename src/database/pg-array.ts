const NEEDS_ESCAPE = /[\\"]/;

/**
 * `values` as one Postgres array literal (`{"a","b \"c\"",NULL,3}`), to pass as a
 * single text parameter and cast in SQL (`${pgArray(urls)}::text[]`). Prisma and pg
 * convert an array parameter element by element (type checks, a copy, then the same
 * escaping as here); for the ingest statement's dozen columns of 1,000 rows that was
 * ~12% of the service CPU. Strings are always quoted, so commas, braces, spaces and
 * the word NULL stay text; only `\` and `"` are escaped. Postgres text cannot hold
 * NUL, which callers refuse before.
 */
export function pgArray(values: ReadonlyArray<string | number | null>): string {
  let literal = '{';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) literal += ',';
    const v = values[i];
    if (v === null) literal += 'NULL';
    else if (typeof v === 'number') literal += String(v);
    else literal += `"${NEEDS_ESCAPE.test(v) ? escapeElement(v) : v}"`;
  }
  return `${literal}}`;
}

/**
 * `\` and `"` escaped with a backslash. Two plain-string replaceAll passes: a global
 * regular expression with `$&` took twice the time and allocated per match (a JSON
 * document has a dozen quotes).
 */
function escapeElement(v: string): string {
  return v.replaceAll('\\', '\\\\').replaceAll('"', '\\"');
}
