// Telling ids apart in a list. Callback and batch ids are UUIDv7: their first 12 hex
// digits are the millisecond they were made, so the callbacks of one batch (and batches
// of the same minute) all begin alike; their last 11 digits are random. A list shows the
// end of each id, as many digits as it takes for the ids of that list to differ.

/** Fewest digits shown: 16.7 million tails, so ids of a page rarely need more. */
export const MIN_TAIL_DIGITS = 6;

/**
 * id → '…' and its last hex digits: the fewest (at least MIN_TAIL_DIGITS) with which no
 * two different ids of `ids` read the same.
 * @param {string[]} ids
 * @returns {Map<string, string>}
 */
export function shortIds(ids) {
  const digits = [...new Set(ids)].map((id) => [id, id.replace(/-/g, '')]);
  for (let n = MIN_TAIL_DIGITS; ; n++) {
    const tails = digits.map(([id, hex]) => [id, hex.slice(-n)]);
    if (new Set(tails.map(([, tail]) => tail)).size === tails.length || digits.every(([, hex]) => hex.length <= n)) {
      return new Map(tails.map(([id, tail]) => [id, `…${tail}`]));
    }
  }
}
