/**
 * A page of a list read one row past its size (`limit + 1`): its first `limit` rows,
 * and the cursor of the last of them only when a row follows, so the last page says
 * `nextCursor: null` also when it is exactly full (read `limit` deep, it could not tell
 * and sent the client for an empty page).
 */
export function pageOf<T, C>(rows: readonly T[], limit: number, cursorOf: (last: T) => C): { rows: T[]; nextCursor: C | null } {
  if (rows.length <= limit) return { rows: [...rows], nextCursor: null };
  const page = rows.slice(0, limit);
  return { rows: page, nextCursor: cursorOf(page[limit - 1]) };
}
