import { describe, expect, it } from 'vitest';
import { FIRST_CLAIM_ROWS, claimLimit, nextRecheckMs } from './claim.policy.js';

describe('claim.policy', () => {
  it.each([
    // window 10,000, claim batch 10,000: claims double from an idle start
    [{ concurrency: 10_000, claimBatch: 10_000, held: 0, sending: 0 }, FIRST_CLAIM_ROWS, false],
    [{ concurrency: 10_000, claimBatch: 10_000, held: 256, sending: 200 }, 256, false],
    [{ concurrency: 10_000, claimBatch: 10_000, held: 512, sending: 512 }, 512, false],
    [{ concurrency: 10_000, claimBatch: 10_000, held: 4_096, sending: 4_000 }, 4_096, false],
    [{ concurrency: 10_000, claimBatch: 10_000, held: 8_192, sending: 8_192 }, 8_192, false],
    // … up to the claim batch, and to the room left in twice the window
    [{ concurrency: 10_000, claimBatch: 5_000, held: 8_192, sending: 8_192 }, 5_000, false],
    [{ concurrency: 10_000, claimBatch: 10_000, held: 15_000, sending: 10_000 }, 5_000, false],
    // default settings: the claim batch is the limit, as before
    [{ concurrency: 200, claimBatch: 500, held: 0, sending: 0 }, FIRST_CLAIM_ROWS, false],
    [{ concurrency: 200, claimBatch: 500, held: 150, sending: 150 }, 250, false],
    [{ concurrency: 200, claimBatch: 500, held: 300, sending: 200 }, 100, false],
    // a tiny window: never more than its room
    [{ concurrency: 1, claimBatch: 500, held: 0, sending: 0 }, 2, false],
  ])('should take %o → %i rows', (room, limit, waitForRoom) => {
    expect(claimLimit(room)).toEqual({ limit, waitForRoom });
  });

  it('should wait for a finished call when the room left is under half the window', () => {
    expect(claimLimit({ concurrency: 200, claimBatch: 500, held: 385, sending: 200 })).toEqual({ limit: 0, waitForRoom: true });
    // ~30 rows came free since the last claim: not yet worth a statement
    expect(claimLimit({ concurrency: 200, claimBatch: 500, held: 370, sending: 200 })).toEqual({ limit: 0, waitForRoom: true });
    expect(claimLimit({ concurrency: 200, claimBatch: 500, held: 301, sending: 200 })).toEqual({ limit: 0, waitForRoom: true });
    // … but not when nothing is in flight that could finish
    expect(claimLimit({ concurrency: 200, claimBatch: 500, held: 385, sending: 0 })).toEqual({ limit: 15, waitForRoom: false });
  });

  it('should claim while calls are in flight when the claim batch is smaller than half the window', () => {
    // half of this window (5,000) is more than one claim may take: a full claim is worth it
    expect(claimLimit({ concurrency: 10_000, claimBatch: 500, held: 19_500, sending: 10_000 })).toEqual({ limit: 500, waitForRoom: false });
    expect(claimLimit({ concurrency: 10_000, claimBatch: 500, held: 19_600, sending: 10_000 })).toEqual({ limit: 0, waitForRoom: true });
  });

  it('should claim nothing when the window and its waiting room are full', () => {
    expect(claimLimit({ concurrency: 200, claimBatch: 500, held: 400, sending: 0 })).toEqual({ limit: 0, waitForRoom: false });
  });
});

describe(nextRecheckMs.name, () => {
  it('should double after each look that took nothing, up to ten times the base, and go back to the base once one takes rows', () => {
    const delays = [50];
    for (let i = 0; i < 6; i++) delays.push(nextRecheckMs(delays.at(-1)!, false, 50));
    expect(delays).toEqual([50, 100, 200, 400, 500, 500, 500]);
    expect(nextRecheckMs(500, true, 50)).toBe(50);
    expect(nextRecheckMs(50, true, 50)).toBe(50);
  });
});
