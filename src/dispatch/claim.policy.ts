/** The smallest claim a worker makes while it holds little or nothing (rows). */
export const FIRST_CLAIM_ROWS = 256;

export interface ClaimRoom {
  /** DISPATCH_CONCURRENCY: calls in flight at most. */
  concurrency: number;
  /** DISPATCH_CLAIM_BATCH: most rows one claim statement takes. */
  claimBatch: number;
  /** Rows this worker holds now: in flight plus waiting in memory for a host slot. */
  held: number;
  /** Calls in flight now. */
  sending: number;
}

/**
 * How many rows the next claim takes, or 0 to wait: either the window is full, or
 * the room left is so small that a claim now would be a statement for a handful of
 * rows, and a finished call should claim instead (`waitForRoom`).
 *
 * Claimed rows wait in memory for at most one window's worth (twice the window in
 * all), and one statement takes at most `claimBatch`. Within that, a claim takes no
 * more rows than the worker already holds (at least FIRST_CLAIM_ROWS), so claims
 * double in size after an idle spell: nothing is sent until a claim returns, and a
 * claim costs Postgres tens of microseconds a row (10,000 rows: a quarter of a
 * second and more), so a small first claim starts calls within milliseconds while
 * the next, larger claims run in Postgres as those calls go out.
 */
export function claimLimit({ concurrency, claimBatch, held, sending }: ClaimRoom): { limit: number; waitForRoom: boolean } {
  const room = Math.min(concurrency * 2 - held, claimBatch);
  const waitForRoom = room < Math.max(1, Math.floor(concurrency / 10)) && sending > 0;
  if (waitForRoom || room <= 0) return { limit: 0, waitForRoom };
  return { limit: Math.min(room, Math.max(FIRST_CLAIM_ROWS, held)), waitForRoom };
}
