import { AppError } from '../common/app.error.js';

/** The longest window a recovery of a whole key (no receiver, host, batch or event) may cover. */
export const MAX_UNSCOPED_WINDOW_MS = 31 * 24 * 3_600_000;

export interface RecoveryWindowInput {
  since?: string;
  until?: string;
  /** A receiver, host, batch or event was given. */
  scoped: boolean;
  now: Date;
}

/**
 * The window [since, until) a recovery covers, on the callbacks' acceptance time:
 * until defaults to now (and a later one is now: nothing accepted later has failed
 * yet, and a recovery sends only what finished before it began). Without a scope a
 * since is required and the window is at most 31 days, so one request cannot walk a
 * key's whole history. A 400 says what is wrong.
 */
export function recoveryWindow({ since, until, scoped, now }: RecoveryWindowInput): { since: Date | null; until: Date } {
  const from = since === undefined ? null : new Date(since);
  const to = until === undefined || new Date(until) > now ? now : new Date(until);
  if (from === null && !scoped) {
    throw new AppError('validation_failed', 'give a receiver, host, batch or event, or a window (since, and until at most 31 days later)');
  }
  if (from !== null && from >= to) throw new AppError('validation_failed', 'since must be before until (and before now)');
  if (!scoped && to.getTime() - from!.getTime() > MAX_UNSCOPED_WINDOW_MS) {
    throw new AppError('validation_failed', 'a window without a receiver, host, batch or event covers at most 31 days');
  }
  return { since: from, until: to };
}
