import type { WaitingState } from './callback.repository.js';

/** Why a pending callback is not being sent, first reason first. */
export interface Waiting {
  reason: 'receiver_disabled' | 'not_due' | 'ordering' | 'host_paused' | 'host_at_capacity' | 'rate_limited' | 'key_share';
  detail: string;
  /** With `ordering`: the callback it waits for. */
  callbackId?: string;
}

/**
 * The reason a pending callback waits, in the order the claim checks them: its time
 * has not come (a retry's delay, `runAt`); an earlier callback of its ordering key is
 * unfinished; its host's breaker is open, or its key's own breaker at the host
 * (timeouts of its key's calls there pause only its key); its host has no free slot; its host is out
 * of rate tokens. A due callback with none of these waits for a claim, which gives
 * each key its weighted share: the workers' windows are busy with its key's share and
 * other keys' (`key_share`).
 */
export function waitingReason(s: WaitingState): Waiting {
  if (s.notDue) return { reason: 'not_due', detail: `due at ${s.dueAt.toISOString()}` };
  if (s.behind) return { reason: 'ordering', detail: `behind callback ${s.behind} of its ordering key`, callbackId: s.behind };
  if (s.breakerState !== null && s.breakerState !== 'closed' && (s.slots ?? 0) < 1) {
    return { reason: 'host_paused', detail: `its host's circuit breaker is ${s.breakerState}${s.openUntil ? ` until ${s.openUntil.toISOString()}` : ''}` };
  }
  if (s.keyPausedUntil !== null) {
    return {
      reason: 'host_paused',
      detail: `its key's own circuit breaker at its host (its calls there timed out or broke off) pauses it until ${s.keyPausedUntil.toISOString()}`,
    };
  }
  if (s.slots !== null && s.slots < 1) return { reason: 'host_at_capacity', detail: 'every slot of its host is in use' };
  if (s.tokens !== null && s.tokens < 1) return { reason: 'rate_limited', detail: "its host's rate limit is spent for now" };
  return { reason: 'key_share', detail: "due: waiting for a claim, which gives each key its share of the workers' windows" };
}
