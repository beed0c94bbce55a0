import { Injectable } from '@nestjs/common';
import { withoutAuthorization } from '../common/headers.js';
import { destinationOf } from '../common/validators.js';
import { AppConfig } from '../config/app.config.js';
import { attemptError, credentialsDestinationProblem, eventTypeOf, type TransformErrorView, type WebhookRequest } from '../transforms/transform.policy.js';
import { TransformService, type ReceiverTransform } from '../transforms/transform.service.js';
import type { RecordedOutcome } from './outcome.types.js';
import type { QueuedCallback } from './call.preparation.js';
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
 * The sender's step for a callback whose receiver has a transform (src/transforms): runs
 * it on the stored request and builds the request it made as any other, so the signature
 * covers the body as sent. The private ranges the claim grants (`privateNetworks`) hold
 * for the stored destination only, as a portal session (public addresses only) may have
 * written the transform; per-host limits count the stored destination too. The
 * transform never sees the receiver's credentials: AuthorizedSender adds them after this
 * step, over any Authorization header the transform set, only while the URL stays at
 * the stored destination (credentialsDestinationProblem). The headers recorded as
 * `transformed` are copied before that, without Authorization for a receiver with
 * `auth`, so no credential is stored with the attempt.
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
