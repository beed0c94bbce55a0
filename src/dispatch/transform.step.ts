import { Injectable } from '@nestjs/common';
import { withoutAuthorization } from '../common/headers.js';
import { destinationOf } from '../common/validators.js';
import { AppConfig } from '../config/app.config.js';
import { attemptError, credentialsDestinationProblem, eventTypeOf, type TransformErrorView, type WebhookRequest } from '../transforms/transform.policy.js';
import { TransformService, type ReceiverTransform } from '../transforms/transform.service.js';
import type { RecordedOutcome } from './outcome.types.js';
import type { QueuedCallback } from './producer.service.js';
import { buildRequest } from './request.builder.js';
import type { CallResult, OutgoingCall } from './transport/call.js';

/** What a callback of a receiver with a transform comes to before the wire. */
export type TransformedCall =
  /**
   * the request the transform made, signed over its body; and, for the attempt's record,
   * the same without what the receiver's credentials add when it is sent (AuthorizedSender)
   */
  | { kind: 'call'; call: OutgoingCall; transformed: WebhookRequest }
  /** the transform failed: an attempt without a call, retried on the callback's schedule */
  | { kind: 'failed'; result: CallResult }
  /** the handler returned null: nothing is sent, the callback is cancelled */
  | { kind: 'cancelled'; startedAt: Date; durationMs: number };

/** The `last_error` of a callback its receiver's transform cancelled. */
export const CANCELLED_BY_TRANSFORM = 'transform: the handler returned null, so nothing was sent';

/**
 * The sender's step for a callback whose receiver has a transform (src/transforms):
 * runs it on the stored request, then builds the request it made as any other
 * (request.builder.ts), so the signature is computed over the body as sent. The URL it
 * returns meets the same network policy at connect time as any callback's (a private
 * address is `blocked`). The claim grants the private ranges (`privateNetworks`) for the
 * stored destination: a transform that sends the call to another destination connects
 * to public addresses only, since a portal session, which sets public addresses only,
 * may have written it. Per-host limits still count the callback's stored destination.
 *
 * The receiver's credentials are no part of what the transform is given or returns: the
 * sender adds them after this step (AuthorizedSender), replacing any Authorization header
 * the transform set, and only while the URL stays at the callback's stored destination
 * (credentialsDestinationProblem; another is a `transform_error`). The headers recorded
 * as `transformed` are a copy taken before that, so no credential is stored with the
 * attempt; for a receiver with `auth` without an Authorization header, since the one
 * the transform may have set is not the one that goes.
 */
@Injectable()
export class TransformStep {
  constructor(
    private readonly transforms: TransformService,
    private readonly config: AppConfig,
  ) {}

  async prepare(row: QueuedCallback & { transform: ReceiverTransform }): Promise<TransformedCall> {
    const startedAt = new Date();
    const stored: WebhookRequest = { method: row.method, url: row.url, headers: row.headers, body: row.body };
    const context = { eventType: eventTypeOf(row.headers), receiver: row.transform.receiver, attempt: row.attempts + 1 };
    const out = await this.transforms.apply(row.transform, stored, context);
    if (out.kind === 'cancel') return { kind: 'cancelled', startedAt, durationMs: out.durationMs };
    const failed = (error: TransformErrorView): TransformedCall => ({
      kind: 'failed',
      result: { outcome: 'transform_error', error: attemptError(error), trace: { startedAt, durationMs: out.durationMs } },
    });
    if (out.kind === 'error') return failed(out.error);
    const elsewhere = credentialsDestinationProblem(out.request.url, row.host, Boolean(row.credentials));
    if (elsewhere) return failed(elsewhere);
    const privateNetworks = row.privateNetworks && destinationOf(out.request.url) === row.host;
    const call = buildRequest({ ...row, ...out.request, privateNetworks }, row.secrets, this.config.httpTimeoutMs);
    // a copy: the sender adds the credentials to the call's own headers
    const recorded = row.credentials?.type ? withoutAuthorization(call.headers) : { ...call.headers };
    return { kind: 'call', call, transformed: { method: call.method, url: call.url, headers: recorded, body: call.body } };
  }
}

/** The write-back of a callback its transform cancelled: no attempt (outcome null), the callback cancelled with why. */
export function cancelledOutcome(row: QueuedCallback, startedAt: Date, durationMs: number): RecordedOutcome & { batchId: string } {
  return {
    callbackId: row.id,
    batchId: row.batchId,
    apiKeyId: row.apiKeyId,
    host: row.host,
    number: row.attempts,
    status: 'cancelled',
    nextAttemptAt: null,
    completedAt: new Date(startedAt.getTime() + durationMs),
    startedAt,
    durationMs,
    dnsMs: null,
    connectMs: null,
    tlsMs: null,
    tunnelMs: null,
    firstByteMs: null,
    statusCode: null,
    outcome: null,
    error: CANCELLED_BY_TRANSFORM,
    responseHeaders: null,
    responseBody: null,
    receiverId: row.receiverId,
    transformed: null,
  };
}
