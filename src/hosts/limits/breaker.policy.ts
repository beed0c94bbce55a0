import type { BreakerStateName, Outcome } from '../../model/states.js';

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
 * Whose breaker a failure counts toward. A destination is shared by every key, so only
 * a failure that is the same for any caller pauses them all:
 * - `host` (the host row's breaker): `connect_error`, `dns_error`: the name does not
 *   resolve, or no connection within the transport's own connect timeout.
 * - `key` (its breaker at the host, `host_key_breaker`): `timeout`, `network_error`,
 *   which depend on the call (its `timeoutMs`, a path that hangs or drops the
 *   connection, its body). No floor makes a timeout the host's: a slow path times out
 *   past any floor. The price: a host down in a way that looks like timeouts costs each
 *   key HOST_BREAKER_FAILURES calls before it pauses.
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
