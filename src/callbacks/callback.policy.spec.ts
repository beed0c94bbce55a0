import { describe, expect, it } from 'vitest';
import { waitingReason } from './callback.policy.js';
import type { WaitingState } from './callback.repository.js';

const due: WaitingState = {
  notDue: false,
  dueAt: new Date('2026-12-01T10:00:00Z'),
  behind: null,
  breakerState: 'closed',
  openUntil: null,
  slots: 5,
  tokens: null,
  keyPausedUntil: null,
};

describe('waitingReason', () => {
  it.each<[string, Partial<WaitingState>, string]>([
    ['a retry not due yet', { notDue: true }, 'not_due'],
    ['an earlier callback of its ordering key', { behind: '0190-x' }, 'ordering'],
    ['an open breaker', { breakerState: 'open', slots: 0, openUntil: new Date('2026-12-01T10:01:00Z') }, 'host_paused'],
    ["its key's own breaker at the host", { keyPausedUntil: new Date('2026-12-01T10:01:00Z') }, 'host_paused'],
    ["its key's own breaker, the host full too: the pause first", { keyPausedUntil: new Date('2026-12-01T10:01:00Z'), slots: 0 }, 'host_paused'],
    ['a full host', { slots: 0 }, 'host_at_capacity'],
    ['a spent rate limit', { tokens: 0.4 }, 'rate_limited'],
    ['nothing in its way', {}, 'key_share'],
    ['a host never seen (no host row)', { breakerState: null, slots: null }, 'key_share'],
    ['a half-open breaker with its probe slot free', { breakerState: 'half_open', slots: 1 }, 'key_share'],
    ['not due and behind another: the time first', { notDue: true, behind: 'x' }, 'not_due'],
  ])('should say %s waits for %s', (_, state, reason) => {
    expect(waitingReason({ ...due, ...state }).reason).toBe(reason);
  });

  it('should name the callback it waits behind', () => {
    expect(waitingReason({ ...due, behind: 'abc' })).toMatchObject({ callbackId: 'abc', detail: 'behind callback abc of its ordering key' });
  });
});
