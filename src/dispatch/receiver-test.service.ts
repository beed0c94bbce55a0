import { Injectable } from '@nestjs/common';
import { layerHeaders } from '../common/headers.js';
import { AppError } from '../common/app.error.js';
import { uuidv7 } from '../common/uuid.js';
import { destinationOf } from '../common/validators.js';
import { AppConfig } from '../config/app.config.js';
import type { ReceiverTestDto } from '../receivers/dto/receiver-test.dto.js';
import { ReceiverService } from '../receivers/receiver.service.js';
import { ReceiverTester } from '../receivers/receiver-tester.js';
import { SigningSecretService } from '../signing/signing-secret.service.js';
import { transformKey } from '../transforms/transform.service.js';
import { AuthorizedSender } from './auth/authorized.sender.js';
import { CredentialCache } from './auth/credential.cache.js';
import type { QueuedCallback } from './call.preparation.js';
import { buildRequest } from './request.builder.js';
import { CANCELLED_BY_TRANSFORM, TransformStep } from './transform.step.js';
import type { CallResult, OutgoingCall } from './transport/call.js';

/**
 * The test call: a callback made up now for the receiver (its URL, headers, timeout,
 * signing secrets, current credentials and transform), built and sent as the worker
 * sends one: its transform first (transform.step.ts, with the worker's rules: a failure
 * is a `transform_error` and nothing is sent, a null answer sends nothing), then signed
 * over the body as sent (request.builder.ts), then sent with the credentials
 * (AuthorizedSender), its result answered as an attempt. Nothing is stored, no attempt
 * recorded, no host slot taken: it is one call, made by the process that got the
 * request, in the request's time (at most the transform's budget and the receiver's
 * timeout). A disabled receiver is tested too: finding out before enabling it is the point.
 */
@Injectable()
export class ReceiverTestService extends ReceiverTester {
  constructor(
    private readonly receivers: ReceiverService,
    private readonly signing: SigningSecretService,
    private readonly credentials: CredentialCache,
    private readonly sender: AuthorizedSender,
    private readonly transformStep: TransformStep,
    private readonly config: AppConfig,
  ) {
    super();
  }

  async testReceiver(apiKeyId: string, name: string, type = 'receiver.test'): Promise<ReceiverTestDto> {
    const row = await this.receivers.require(apiKeyId, name);
    if (!row.url) throw new AppError('validation_failed', `receiver ${name} has no URL to send a test to: set one first`);
    const id = uuidv7();
    const body = JSON.stringify({ type, receiver: name, sentAt: new Date().toISOString() });
    const host = destinationOf(row.url);
    const [lookup, privateNetworks, credentials] = await Promise.all([
      this.signing.secretsFor([{ receiverId: row.id, apiKeyId, host }]),
      // where it may connect, as its callbacks may (the claim's rule)
      this.receivers.privateNetworksOf(row, host),
      this.credentials.current(row.id),
    ]);
    const example = {
      id,
      apiKeyId,
      receiverId: row.id,
      url: row.url,
      host,
      method: 'POST',
      headers: layerHeaders(row.headers as Record<string, string>, { 'content-type': 'application/json' }),
      body,
      timeoutMs: row.timeoutMs ?? this.config.httpTimeoutMs,
      attempts: 0,
      traceparent: null,
      privateNetworks,
      secrets: lookup.secretsOf({ receiverId: row.id, apiKeyId, host }),
      credentials,
    } as QueuedCallback;

    let call: OutgoingCall | undefined;
    let result: CallResult | undefined;
    if (row.transformCode === null) call = buildRequest(example, example.secrets, this.config.httpTimeoutMs);
    else {
      const transform = { receiverId: row.id, receiver: name, code: row.transformCode, key: transformKey(row.id, row.transformCode) };
      const prepared = await this.transformStep.prepare({ ...example, transform });
      if (prepared.kind === 'cancelled') return answer(name, id, example, { startedAt: prepared.startedAt, durationMs: prepared.durationMs });
      if (prepared.kind === 'call') call = prepared.call;
      else result = prepared.result;
    }
    if (call) result = await this.sender.send(call, credentials);
    return answer(name, id, call ?? example, result!.trace, result);
  }
}

/**
 * The test call answered as an attempt: `sent`, the request that went (its URL and body
 * as its transform made them), or the example when none did. `result` undefined: its
 * transform returned null, so nothing was sent (a callback would be cancelled).
 */
function answer(receiver: string, webhookId: string, sent: { url: string; body: string | null }, t: CallResult['trace'], result?: CallResult): ReceiverTestDto {
  return {
    receiver,
    url: sent.url,
    webhookId,
    body: sent.body,
    startedAt: t.startedAt.toISOString(),
    durationMs: t.durationMs,
    statusCode: result?.statusCode ?? null,
    outcome: result?.outcome ?? null,
    ok: result?.outcome === 'success',
    error: result ? (result.error ?? null) : CANCELLED_BY_TRANSFORM,
    phases: {
      dnsMs: t.dnsMs ?? null,
      connectMs: t.connectMs ?? null,
      tlsMs: t.tlsMs ?? null,
      firstByteMs: t.firstByteMs ?? null,
      ...(t.tunnelMs !== undefined && { tunnelMs: t.tunnelMs }),
      ...(result?.tokenMs !== undefined && { tokenMs: result.tokenMs }),
    },
    auth: result?.auth ?? null,
    responseHeaders: result?.responseHeaders ?? null,
    responseBody: result?.responseBody ?? null,
  };
}
