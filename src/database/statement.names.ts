/** Distinct statements prepared by name per client; any beyond run unnamed (parsed and planned every time). */
const MAX_NAMED_STATEMENTS = 500;

/**
 * Names each statement by its text, so every pooled connection parses and plans it
 * once and then only binds and executes it. The hot-path statements have a fixed
 * text whatever the number of rows (they take arrays), and their planning cost as
 * much as running them: the status read of 20 callbacks took ~0.43 ms prepared
 * against ~0.8–1.3 ms unnamed. Statement texts that vary without end (a Prisma
 * query with an `IN` list of any length) stop getting names at the cap.
 */
export function statementNamer(prefix: string): (query: { sql: string }) => string {
  const names = new Map<string, string>();
  return ({ sql }) => {
    let name = names.get(sql);
    if (name === undefined && names.size < MAX_NAMED_STATEMENTS) names.set(sql, (name = `${prefix}_${names.size}`));
    return name ?? ''; // '' is the unnamed statement
  };
}
