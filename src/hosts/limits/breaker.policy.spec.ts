import { describe, expect, it } from 'vitest';
import type { Outcome } from '../../model/states.js';
import {
  NO_RESULTS,
  failureScope,
  foldInto,
  foldOutcome,
  isBreakerFailure,
  isNoop,
  nextBreaker,
  type BreakerScope,
  type BreakerState,
  type HostResults,
} from './breaker.policy.js';

const NOW = new Date('2026-11-30T12:00:00Z');
const settings = { threshold: 3, cooldownMs: 1000 };
const later = new Date(NOW.getTime() + 1000);
const closed = (failures = 0): BreakerState => ({ state: 'closed', failures, openedAt: null, openUntil: null });
const open: BreakerState = { state: 'open', failures: 3, openedAt: new Date(NOW.getTime() - 5000), openUntil: new Date(NOW.getTime() - 4000) };
const halfOpen: BreakerState = { ...open, state: 'half_open', openUntil: later };
const results = (outcomes: Outcome[]): HostResults => outcomes.reduce(foldOutcome, NO_RESULTS);

describe('breaker.policy', () => {
  it.each<[Outcome, boolean]>([
    ['timeout', true],
    ['connect_error', true],
    ['dns_error', true],
    ['network_error', true],
    ['success', false],
    ['http_error', false],
    ['tls_error', false],
    ['blocked', false],
    ['auth_error', false],
  ])('should count %s as a breaker failure: %s', (outcome, expected) => {
    expect(isBreakerFailure(outcome)).toBe(expected);
  });

  it.each<[Outcome, BreakerScope | undefined]>([
    ['connect_error', 'host'],
    ['dns_error', 'host'],
    ['timeout', 'key'],
    ['network_error', 'key'],
    ['success', undefined],
    ['http_error', undefined],
    ['tls_error', undefined],
    ['blocked', undefined],
  ])("should count %s toward the %s's breaker", (outcome, expected) => {
    expect(failureScope(outcome)).toBe(expected);
    expect(failureScope(outcome) !== undefined).toBe(isBreakerFailure(outcome));
  });

  it.each<[BreakerScope, Outcome[], HostResults]>([
    // a host shared by all keys: only what says it cannot be reached, whoever calls
    ['host', ['timeout', 'timeout', 'timeout'], { trailingFailures: 0, answered: false }],
    ['host', ['network_error', 'connect_error', 'timeout', 'dns_error'], { trailingFailures: 2, answered: false }],
    ['host', ['connect_error', 'success', 'timeout'], { trailingFailures: 0, answered: true }],
    // one key at a host: what depends on its calls (their timeouts, paths, bodies)
    ['key', ['timeout', 'timeout', 'network_error'], { trailingFailures: 3, answered: false }],
    ['key', ['timeout', 'connect_error', 'dns_error'], { trailingFailures: 1, answered: false }],
    ['key', ['timeout', 'http_error', 'timeout'], { trailingFailures: 1, answered: true }],
    ['key', ['blocked', 'tls_error'], { trailingFailures: 0, answered: true }],
  ])("should fold into the %s's breaker %j as %j", (scope, outcomes, expected) => {
    expect(outcomes.reduce((r, o) => foldInto(scope, r, o), NO_RESULTS)).toEqual(expected);
  });

  it.each<[Outcome[], HostResults]>([
    [[], { trailingFailures: 0, answered: false }],
    [['timeout', 'connect_error'], { trailingFailures: 2, answered: false }],
    [['timeout', 'success', 'timeout'], { trailingFailures: 1, answered: true }],
    [['timeout', 'http_error'], { trailingFailures: 0, answered: true }],
    [['blocked', 'blocked'], { trailingFailures: 0, answered: false }],
    // a token endpoint that failed says nothing of the receiver's host: neither a failure nor an answer
    [['timeout', 'auth_error', 'auth_error'], { trailingFailures: 1, answered: false }],
  ])('should fold %j into %j', (outcomes, expected) => {
    expect(results(outcomes)).toEqual(expected);
  });

  it.each<[string, BreakerState, Outcome[], BreakerState]>([
    ['count failures below the threshold', closed(1), ['timeout'], closed(2)],
    ['open at the threshold', closed(2), ['connect_error'], { state: 'open', failures: 3, openedAt: NOW, openUntil: later }],
    [
      'open when one report crosses it',
      closed(),
      ['timeout', 'timeout', 'timeout', 'timeout'],
      { state: 'open', failures: 4, openedAt: NOW, openUntil: later },
    ],
    ['reset on an answer', closed(2), ['timeout', 'success'], closed(0)],
    ['keep failures after the last answer', closed(2), ['success', 'timeout'], closed(1)],
    ['stay closed on HTTP errors', closed(2), ['http_error', 'http_error'], closed(0)],
    ['close after an answered probe', halfOpen, ['http_error'], closed(0)],
    ['re-open after a failed probe, with a new cool-down', halfOpen, ['timeout'], { state: 'open', failures: 4, openedAt: NOW, openUntil: later }],
    ['ignore late results while open', open, ['success', 'timeout'], open],
    ['leave half_open alone on no results', halfOpen, [], halfOpen],
  ])('should %s', (_name, current, outcomes, expected) => {
    expect(nextBreaker(current, results(outcomes), settings, NOW)).toEqual(expected);
  });

  it.each<[BreakerState, Outcome[], boolean]>([
    [closed(), ['success', 'http_error'], true],
    [closed(), ['timeout'], false],
    [closed(1), ['success'], false],
    [halfOpen, ['success'], false],
  ])('should tell a report that changes nothing (%j, %j → %s)', (current, outcomes, expected) => {
    expect(isNoop(current, results(outcomes))).toBe(expected);
  });
});
