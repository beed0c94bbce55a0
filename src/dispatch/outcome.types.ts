import type { CallbackStatus, Outcome } from '../model/states.js';

/** One finished attempt and the callback state it leads to. */
export interface RecordedOutcome {
  callbackId: string;
  apiKeyId: string;
  host: string;
  number: number;
  status: CallbackStatus;
  nextAttemptAt: Date | null;
  completedAt: Date | null;
  startedAt: Date;
  durationMs: number;
  dnsMs: number | null;
  connectMs: number | null;
  tlsMs: number | null;
  tunnelMs: number | null;
  firstByteMs: number | null;
  statusCode: number | null;
  /** null: no attempt was made (its receiver's transform cancelled it): the callback moves, no attempt row is written. */
  outcome: Outcome | null;
  error: string | null;
  responseHeaders: Record<string, string> | null;
  responseBody: string | null;
  receiverId: string | null;
  /** The request its receiver's transform made, as sent (src/transforms); null or absent: the stored request went. */
  transformed?: { method: string; url: string; headers: Record<string, string>; body: string | null } | null;
  /** The receiver authentication it went with (basic, bearer, oauth2); null or left out: none. */
  auth?: string | null;
  /** Time spent getting an OAuth2 token first, ms; null or left out when none was fetched or waited for. */
  tokenMs?: number | null;
}
