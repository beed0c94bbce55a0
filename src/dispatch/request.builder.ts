import { layerHeaders } from '../common/headers.js';
import { USER_AGENT } from '../common/user-agent.js';
import type { AppConfig } from '../config/app.config.js';
import { signWebhook } from '../signing/signature.js';
import type { ClaimedCallback } from './claim.repository.js';
import type { RecordedOutcome } from './outcome.types.js';
import { nextState } from './retry.policy.js';
import type { CallResult, OutgoingCall } from './transport/call.js';

/**
 * The request for one attempt: the client's headers plus the Standard Webhooks
 * headers. `webhook-id` is the callback id, the same on every attempt, so receivers
 * can drop duplicates; the timestamp and signature are made fresh per attempt.
 *
 * One header per name goes out, whatever the case of the stored names: the client's
 * `User-Agent` replaces the service's. A row stored by an event's insert lays the
 * event's own `content-type` over its receiver's headers in SQL (`||`, which compares
 * names exactly), so it may hold `Content-Type` beside it; jsonb lists names by length,
 * then byte order, so of two spellings of one name the all-lowercase one, the
 * service's own, comes last and is the one sent.
 */
export function buildRequest(row: ClaimedCallback, secrets: readonly string[], defaultTimeoutMs: number, now = Date.now()): OutgoingCall {
  const body = row.body ?? '';
  const timestamp = Math.floor(now / 1000);
  const headers = layerHeaders({ 'user-agent': USER_AGENT }, row.headers);
  headers['webhook-id'] = row.id;
  headers['webhook-timestamp'] = String(timestamp);
  if (secrets.length > 0) headers['webhook-signature'] = signWebhook(row.id, timestamp, body, secrets);
  return {
    url: row.url,
    method: row.method,
    headers,
    body: row.body,
    timeoutMs: row.timeoutMs || defaultTimeoutMs,
    traceparent: row.traceparent,
    privateNetworks: row.privateNetworks,
  };
}

/** The row to write back for a finished call: the attempt and the callback's next state. */
export function toRecordedOutcome(row: ClaimedCallback, result: CallResult, config: AppConfig, now = Date.now()): RecordedOutcome & { batchId: string } {
  const number = row.attempts + 1;
  const next = nextState(
    result,
    number,
    {
      maxAttempts: row.maxAttempts,
      retryDelaysMs: row.retryDelaysMs ?? config.retryDelaysMs,
      jitterPermille: config.retryJitterPermille,
      retryAfterMaxMs: config.retryAfterMaxMs,
    },
    now,
  );
  const t = result.trace;
  return {
    callbackId: row.id,
    batchId: row.batchId,
    apiKeyId: row.apiKeyId,
    host: row.host,
    number,
    status: next.status,
    nextAttemptAt: next.nextAttemptAt ?? null,
    completedAt: next.status === 'pending' ? null : new Date(now),
    startedAt: t.startedAt,
    durationMs: t.durationMs,
    dnsMs: t.dnsMs ?? null,
    connectMs: t.connectMs ?? null,
    tlsMs: t.tlsMs ?? null,
    tunnelMs: t.tunnelMs ?? null,
    firstByteMs: t.firstByteMs ?? null,
    statusCode: result.statusCode ?? null,
    outcome: result.outcome,
    error: result.error ?? null,
    responseHeaders: result.responseHeaders ?? null,
    responseBody: result.responseBody ?? null,
    receiverId: row.receiverId,
    auth: result.auth ?? null,
    tokenMs: result.tokenMs ?? null,
  };
}
