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
import { AuthorizedSender } from './auth/authorized.sender.js';
import { CredentialCache } from './auth/credential.cache.js';
import type { ClaimedCallback } from './claim.repository.js';
import { buildRequest } from './request.builder.js';

/**
 * The test call: a callback made up now for the receiver (its URL, headers, timeout,
 * signing secrets and current credentials), built and sent as the worker sends one
 * (request.builder.ts, AuthorizedSender), its result answered as an attempt. Nothing is
 * stored, no attempt recorded, no host slot taken: it is one call, made by the process
 * that got the request, in the request's time (at most the receiver's timeout). A
 * disabled receiver is tested too: finding out before enabling it is the point.
 */
@Injectable()
export class ReceiverTestService extends ReceiverTester {
  constructor(
    private readonly receivers: ReceiverService,
    private readonly signing: SigningSecretService,
    private readonly credentials: CredentialCache,
    private readonly sender: AuthorizedSender,
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
    const [lookup, privateNetworks] = await Promise.all([
      this.signing.secretsFor([{ receiverId: row.id, apiKeyId, host }]),
      // where it may connect, as its callbacks may (the claim's rule)
      this.receivers.privateNetworksOf(row, host),
    ]);
    const example = {
      id,
      url: row.url,
      method: 'POST',
      headers: layerHeaders(row.headers as Record<string, string>, { 'content-type': 'application/json' }),
      body,
      timeoutMs: row.timeoutMs ?? this.config.httpTimeoutMs,
      traceparent: null,
      privateNetworks,
    } as ClaimedCallback;
    const call = buildRequest(example, lookup.secretsOf({ receiverId: row.id, apiKeyId, host }), this.config.httpTimeoutMs);
    const result = await this.sender.send(call, await this.credentials.current(row.id));
    const t = result.trace;
    return {
      receiver: name,
      url: row.url,
      webhookId: id,
      body,
      startedAt: t.startedAt.toISOString(),
      durationMs: t.durationMs,
      statusCode: result.statusCode ?? null,
      outcome: result.outcome,
      ok: result.outcome === 'success',
      error: result.error ?? null,
      phases: {
        dnsMs: t.dnsMs ?? null,
        connectMs: t.connectMs ?? null,
        tlsMs: t.tlsMs ?? null,
        firstByteMs: t.firstByteMs ?? null,
        ...(t.tunnelMs !== undefined && { tunnelMs: t.tunnelMs }),
        ...(result.tokenMs !== undefined && { tokenMs: result.tokenMs }),
      },
      auth: result.auth ?? null,
      responseHeaders: result.responseHeaders ?? null,
      responseBody: result.responseBody ?? null,
    };
  }
}
