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
 * How many rows the next claim takes, or 0 to wait: either the window is full, or the
 * room left is under half a window (at most `claimBatch`) while calls are in flight, and
 * a finished call should claim instead (`waitForRoom`). A claim costs Postgres a fixed
 * price per statement plus some per row, so small claims spend more on statements than
 * on rows; waiting still leaves half a window queued, more than is sent while a claim
 * runs. Claimed rows wait in memory for at most one window's worth (twice the window in
 * all), one statement takes at most `claimBatch`, and a claim takes no more rows than
 * the worker holds (at least FIRST_CLAIM_ROWS): nothing is sent until a claim returns,
 * so after an idle spell a small first claim starts calls within milliseconds, and the
 * next ones, doubling, run in Postgres as those calls go out.
 */
export function claimLimit({ concurrency, claimBatch, held, sending }: ClaimRoom): { limit: number; waitForRoom: boolean } {
  const free = concurrency * 2 - held;
  const worthwhile = Math.min(claimBatch, Math.max(1, Math.floor(concurrency / 2)));
  const waitForRoom = free < worthwhile && sending > 0;
  if (waitForRoom || free <= 0) return { limit: 0, waitForRoom };
  return { limit: Math.min(free, claimBatch, Math.max(FIRST_CLAIM_ROWS, held)), waitForRoom };
}

/** How far the look again at overdue rows backs off: HOST_RECHECK_MS times this, at most. */
export const RECHECK_BACKOFF_MAX = 10;

/**
 * The delay before the next look at overdue rows that only busy, paused or
 * rate-limited hosts hold, after a look that the recheck timer woke: back to
 * `baseMs` (HOST_RECHECK_MS) when it took rows, doubled (up to RECHECK_BACKOFF_MAX ×
 * `baseMs`) when it took none. A host at its cap across workers frees slots through
 * some worker's write-back, and that worker claims again at once; the others' looks
 * every 50 ms then find it full. With three workers at one host's cap those looks were
 * half of all claim statements and doubled Postgres and workers' CPU per callback
 * (bench/README.md, 2026-12-02). A rate-limited host's next token, or slots freed by a
 * worker that does not claim again, wait at most the longer delay.
 */
export function nextRecheckMs(currentMs: number, tookRows: boolean, baseMs: number): number {
  return tookRows ? baseMs : Math.min(currentMs * 2, baseMs * RECHECK_BACKOFF_MAX);
}
