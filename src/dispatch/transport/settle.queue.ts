/**
 * Finished calls whose continuations run in one turn of the event loop. Against 16,
 * 4 took the recording error's p50 at full load from 3.7–4.1 to 2.2–2.8 ms at the
 * same CPU per call; 1 took it to 1.5–1.7 ms but cost ~20% more CPU per call
 * (bench:dispatch, alternating builds).
 */
const SETTLE_SLICE = 4;

/**
 * Runs the continuations of finished calls a slice per turn of the event loop,
 * after the turn has read its I/O.
 *
 * Settling a call runs all that follows it at once (axios, the dispatcher's
 * bookkeeping, the next send): about 200 µs. Run inside each socket's callback, a
 * turn that reads 200 answers lasts 40 ms, and answers arriving meanwhile wait
 * unread in the kernel; that wait would land in their recorded durations. A call
 * is stamped when its answer is read, and only its settling waits here, so a
 * turn stays a few milliseconds long whatever the load.
 */
export class SettleQueue {
  private waiting: Array<() => void> = [];
  private next = 0;
  private scheduled = false;

  constructor(private readonly slice = SETTLE_SLICE) {}

  /** `settle` must not throw (a promise's resolve and reject do not). */
  push(settle: () => void): void {
    this.waiting.push(settle);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.run);
    }
  }

  /** A slice now; the rest in later turns (an immediate queued while immediates run waits for the next turn). */
  private readonly run = (): void => {
    const end = Math.min(this.next + this.slice, this.waiting.length);
    while (this.next < end) this.waiting[this.next++]();
    if (this.next === this.waiting.length) {
      this.waiting = [];
      this.next = 0;
      this.scheduled = false;
    } else {
      // Under steady load the queue never empties: drop what has run.
      if (this.next >= 1024) {
        this.waiting.splice(0, this.next);
        this.next = 0;
      }
      setImmediate(this.run);
    }
  };
}
