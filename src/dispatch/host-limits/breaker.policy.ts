import type { BreakerStateName, Outcome } from '../../common/states.js';

/** A host's circuit breaker as stored in its `host` row. */
export interface BreakerState {
  state: BreakerStateName;
  /** Timeouts and connection failures in a row, across all workers. */
  failures: number;
  openedAt: Date | null;
  /** open: no call before this; half_open: the probe's window. */
  openUntil: Date | null;
}

/** What one worker saw of a host since its last report, in order folded by `foldOutcome`. */
export interface HostResults {
  /** Breaker failures after the last answer (all of them when nothing answered). */
  trailingFailures: number;
  /** Some call got an answer (any HTTP status): the host is reachable. */
  answered: boolean;
}

export interface BreakerSettings {
  /** Failures in a row that open the breaker. */
  threshold: number;
  cooldownMs: number;
}

/**
 * Outcomes that say the host cannot be reached, which a pause may help: timeouts
 * and connection-level failures. An HTTP error status is an answer; it does not
 * count (retries deal with it), and neither does our own refusal (`blocked`).
 */
export function isBreakerFailure(outcome: Outcome): boolean {
  return outcome === 'timeout' || outcome === 'connect_error' || outcome === 'dns_error' || outcome === 'network_error';
}

export const NO_RESULTS: HostResults = { trailingFailures: 0, answered: false };

/**
 * Whose breaker a failure counts toward. A destination is shared by every key, so a
 * failure pauses all of them only when it says the host itself cannot be reached,
 * whoever calls:
 * - `host` (the host row's breaker, shared): `connect_error` and `dns_error`. The name
 *   does not resolve, or nothing accepts a connection at `scheme://host:port`
 *   (refused, unreachable, or no connection within the transport's own 10 s connect
 *   timeout, whatever the call's `timeoutMs`): the same answer for any caller.
 * - `key` (that key's breaker at the host, `host_key_breaker`): `timeout` and
 *   `network_error`. They depend on the call: its `timeoutMs` (a key may ask for 1 ms
 *   from a host that answers in 400), its path (one that hangs or drops the
 *   connection), its body. Counted per key, they pause only that key's calls there.
 * A floor under which a timeout is "the caller's choice" would not do it alone: a
 * path that answers past any floor still times out, and the breaker would pause every
 * key for one key's slow path. So per key, and no floor: a key with short timeouts
 * pauses itself, which is its own affair. The price: a host that is down in a way that
 * looks like timeouts (packets dropped, a call timeout under the connect timeout)
 * costs each key sending to it HOST_BREAKER_FAILURES calls before that key pauses,
 * instead of that many for all.
 * Everything else (an answer, `tls_error`, our own `blocked`) is no failure.
 */
export type BreakerScope = 'host' | 'key';

export function failureScope(outcome: Outcome): BreakerScope | undefined {
  if (outcome === 'connect_error' || outcome === 'dns_error') return 'host';
  if (outcome === 'timeout' || outcome === 'network_error') return 'key';
  return undefined;
}

/**
 * Adds one finished call to the results of one scope's breaker: its own failures
 * count, the other scope's leave it as it is, and an answer resets both (the host is
 * reachable, and this key's calls to it are answered).
 */
export function foldInto(scope: BreakerScope, results: HostResults, outcome: Outcome): HostResults {
  const s = failureScope(outcome);
  return s !== undefined && s !== scope ? results : foldOutcome(results, outcome);
}

/** Adds one finished call to a host's results. */
export function foldOutcome(results: HostResults, outcome: Outcome): HostResults {
  // our own refusal, and a token endpoint that failed before any call to the host, say nothing of the host
  if (outcome === 'blocked' || outcome === 'auth_error') return results;
  if (isBreakerFailure(outcome)) return { ...results, trailingFailures: results.trailingFailures + 1 };
  return { trailingFailures: 0, answered: true };
}

/**
 * The breaker after a worker's results for the host.
 *
 *   closed ──threshold failures in a row──▶ open ──cool-down over: the claim lets one probe through──▶ half_open
 *   half_open ──probe answered──▶ closed;   half_open ──probe failed──▶ open (a new cool-down)
 *
 * Results of calls that were already in flight when the breaker opened do not
 * change an open breaker: only the probe decides.
 */
export function nextBreaker(current: BreakerState, results: HostResults, settings: BreakerSettings, now: Date): BreakerState {
  const failures = results.answered ? results.trailingFailures : current.failures + results.trailingFailures;
  const open = (): BreakerState => ({ state: 'open', failures, openedAt: now, openUntil: new Date(now.getTime() + settings.cooldownMs) });
  switch (current.state) {
    case 'closed':
      return failures >= settings.threshold ? open() : { ...current, failures };
    case 'half_open':
      if (results.trailingFailures > 0) return open();
      if (results.answered) return { state: 'closed', failures: 0, openedAt: null, openUntil: null };
      return current;
    case 'open':
      return current;
  }
}

/** Whether a report changes nothing on a healthy host (it can be skipped). */
export function isNoop(current: BreakerState, results: HostResults): boolean {
  return current.state === 'closed' && current.failures === 0 && results.trailingFailures === 0;
}
