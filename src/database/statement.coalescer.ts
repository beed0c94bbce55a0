import { isDatabaseUnavailable } from './database.errors.js';

export interface CoalescerOptions<I> {
  /** Statements of this kind running at once; requests arriving meanwhile wait and go together. */
  maxInFlight: number;
  /** Most weight one statement takes (e.g. rows); an input heavier than this still goes, alone. */
  maxWeight: number;
  weight?: (input: I) => number;
}

interface Pending<I, O> {
  input: I;
  resolve: (output: O) => void;
  reject: (error: unknown) => void;
}

/**
 * Serves many concurrent requests for the same statement with one statement: the inputs
 * queued while a run is being scheduled, or while `maxInFlight` runs are busy, go to
 * `run` together, and each caller gets its own output back (`run` answers in input
 * order). Under light load a request waits one turn of the event loop at most; under
 * heavy load the groups grow by themselves. A statement costs far more (round trip,
 * parse, plan, commit and its WAL flush, process wake-ups on both sides) than a row in
 * it, so grouping is what raises the rate of small requests. A group fails as one: when
 * it fails for any reason but an unreachable database, each input is run again alone, and
 * only the input at fault sees the error (safe for writes: a failed statement committed
 * nothing).
 */
export class StatementCoalescer<I, O> {
  private readonly queue: Array<Pending<I, O>> = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly run: (inputs: I[]) => Promise<O[]>,
    private readonly options: CoalescerOptions<I>,
  ) {}

  submit(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      this.schedule();
    });
  }

  /** Starts the next group after this turn of the event loop, so requests parsed in the same turn share it. */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.options.maxInFlight || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) void this.runGroup(this.takeGroup());
    });
  }

  private takeGroup(): Array<Pending<I, O>> {
    const weight = this.options.weight ?? (() => 1);
    let total = weight(this.queue[0].input);
    let n = 1;
    while (n < this.queue.length && total + weight(this.queue[n].input) <= this.options.maxWeight) total += weight(this.queue[n++].input);
    return this.queue.splice(0, n);
  }

  private async runGroup(group: Array<Pending<I, O>>): Promise<void> {
    this.inFlight++;
    try {
      const outputs = await this.run(group.map((p) => p.input));
      group.forEach((p, i) => p.resolve(outputs[i]));
    } catch (error) {
      if (group.length === 1 || isDatabaseUnavailable(error)) group.forEach((p) => p.reject(error));
      else await Promise.all(group.map((p) => this.run([p.input]).then(([o]) => p.resolve(o), p.reject)));
    } finally {
      this.inFlight--;
      this.schedule();
    }
  }
}
