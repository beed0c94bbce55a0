import { Injectable } from '@nestjs/common';
import { AppError, notFound } from '../common/app.error.js';
import { layerHeaders, withoutAuthorization } from '../common/headers.js';
import { USER_AGENT } from '../common/user-agent.js';
import { uuidv7 } from '../common/uuid.js';
import { destinationOf } from '../common/validators.js';
import { CredentialService } from '../receiver-auth/credential.service.js';
import { signWebhook } from '../signing/signature.js';
import { SigningSecretService } from '../signing/signing-secret.service.js';
import type { TransformTestDto, TransformTestResultDto } from '../transforms/dto/transform.dto.js';
import { codeProblem, credentialsDestinationProblem, eventTypeOf, type WebhookRequest } from '../transforms/transform.policy.js';
import { TransformRepository } from '../transforms/transform.repository.js';
import { TransformService, transformKey } from '../transforms/transform.service.js';
import { ReceiverService } from './receiver.service.js';

/** The URL a sample goes to when the receiver has none of its own. */
const NO_URL = 'https://receiver.invalid/';

/**
 * A receiver's transform tried without sending anything (`POST
 * /v1/receivers/{name}/transform/test`, and the portal's "Try it"): its own code or the
 * code given, on a sample body (to its URL with its headers, as a callback naming it
 * would be) or on one of its past deliveries (as its next attempt would get it). Answers
 * what would be sent, signed now with its secrets, so body and signature can be checked
 * as the receiver would; and, as the worker decides it (transform.step.ts), whether the
 * receiver's credentials go with it: which `auth` and whether `tls`, never their values.
 * Their Authorization header is added when a call is sent, replacing any the transform
 * set, so a request shown for a receiver with `auth` holds none; one the transform moved
 * off the input's destination is the worker's error (credentialsDestinationProblem).
 */
@Injectable()
export class ReceiverTransformService {
  constructor(
    private readonly receivers: ReceiverService,
    private readonly transforms: TransformService,
    private readonly deliveries: TransformRepository,
    private readonly signing: SigningSecretService,
    private readonly credentials: CredentialService,
  ) {}

  async testTransform(apiKeyId: string, name: string, dto: TransformTestDto): Promise<TransformTestResultDto> {
    const receiver = await this.receivers.require(apiKeyId, name);
    const code = dto.code ?? receiver.transformCode;
    if (code === null) throw new AppError('validation_failed', `receiver ${name} has no transform: give code to try one`);
    const problem = codeProblem(code);
    if (problem) throw new AppError('validation_failed', problem);
    if ((dto.payload === undefined) === (dto.callbackId === undefined)) throw new AppError('validation_failed', 'give one of payload and callbackId');

    let input: WebhookRequest;
    let id: string;
    let attempt = 1;
    if (dto.callbackId !== undefined) {
      const stored = await this.deliveries.findDelivery(apiKeyId, receiver.id, dto.callbackId);
      if (!stored) throw notFound('delivery');
      ({ id, attempts: attempt } = stored);
      attempt += 1;
      input = { method: stored.method, url: stored.url, headers: stored.headers, body: stored.body };
    } else {
      id = uuidv7();
      const json = typeof dto.payload !== 'string';
      const headers = layerHeaders(receiver.headers as Record<string, string>, json ? { 'content-type': 'application/json' } : undefined);
      input = { method: 'POST', url: receiver.url ?? NO_URL, headers, body: json ? JSON.stringify(dto.payload) : (dto.payload as string) };
    }
    const eventType = dto.eventType ?? eventTypeOf(input.headers);
    const [out, credentials] = await Promise.all([
      this.transforms.apply({ key: transformKey(receiver.id, code), code }, input, { eventType, receiver: name, attempt }),
      this.credentials.viewOf(receiver.id),
    ]);
    const durationMs = Math.round(out.durationMs * 100) / 100;
    const auth = credentials.auth?.type ?? null;
    const sent = { auth, tls: credentials.tls !== null };
    if (out.kind === 'error') return { result: 'error', request: null, error: out.error, durationMs, input, ...sent };
    if (out.kind === 'cancel') return { result: 'cancel', request: null, error: null, durationMs, input, ...sent };
    const elsewhere = credentialsDestinationProblem(out.request.url, destinationOf(input.url), auth !== null || sent.tls);
    if (elsewhere) return { result: 'error', request: null, error: elsewhere, durationMs, input, ...sent };
    const request = await this.signed(receiver.id, apiKeyId, id, out.request);
    if (auth) request.headers = withoutAuthorization(request.headers);
    return { result: 'send', request, error: null, durationMs, input, ...sent };
  }

  /** The request as it would go out now: user-agent, Standard Webhooks headers, signed over its body with the receiver's secrets. */
  private async signed(receiverId: string, apiKeyId: string, id: string, request: WebhookRequest): Promise<WebhookRequest> {
    const secrets = (await this.signing.secretsFor([{ receiverId, apiKeyId, host: '' }])).secretsOf({ receiverId, apiKeyId, host: '' });
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = layerHeaders({ 'user-agent': USER_AGENT }, request.headers);
    headers['webhook-id'] = id;
    headers['webhook-timestamp'] = String(timestamp);
    if (secrets.length > 0) headers['webhook-signature'] = signWebhook(id, timestamp, request.body ?? '', secrets);
    return { ...request, headers };
  }
}
