/**
 * All callback states in one place.
 *
 *   pending ──claim──▶ in_flight ──2xx──────────────▶ succeeded
 *      ▲                  │ ├──retryable, attempts left─▶ pending (next_attempt_at later)
 *      │                  │ └──permanent or exhausted───▶ failed
 *      └──lease expired / released at shutdown
 *   pending | in_flight ──cancel──▶ cancelled;   failed | cancelled ──retry──▶ pending
 */
export const CALLBACK_STATUSES = ['pending', 'in_flight', 'succeeded', 'failed', 'cancelled'] as const;
export type CallbackStatus = (typeof CALLBACK_STATUSES)[number];

export const FINAL_STATUSES: readonly CallbackStatus[] = ['succeeded', 'failed', 'cancelled'];
export const isFinal = (s: CallbackStatus): boolean => FINAL_STATUSES.includes(s);

/** What one attempt came to. */
export const OUTCOMES = [
  'success',
  'http_error',
  'timeout',
  'connect_error',
  'dns_error',
  'tls_error',
  'network_error',
  'blocked',
] as const;
export type Outcome = (typeof OUTCOMES)[number];
