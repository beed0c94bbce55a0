import { Injectable } from '@nestjs/common';
import { BatchService } from '../batches/batch.service.js';
import type { CreateBatchDto } from '../batches/dto/create-batch.dto.js';
import { CallbackService, toCallbackView } from '../callbacks/callback.service.js';
import type { CallbackDetailDto, CallbackPageDto } from '../callbacks/dto/callback.dto.js';
import { AppError, notFound } from '../common/app.error.js';
import { layerHeaders } from '../common/headers.js';
import { hostnameRefusal, NetworkPolicy } from '../common/network.policy.js';
import { pageOf } from '../common/page.js';
import { destinationOf } from '../common/validators.js';
import { AppConfig } from '../config/app.config.js';
import { USER_AGENT } from '../common/user-agent.js';
import type { LatencyHistoryDto, LatencyQueryDto } from '../history/dto/latency.dto.js';
import { LatencyService } from '../history/latency.service.js';
import { ReceiverTransformService } from '../receivers/receiver-transform.service.js';
import { ReceiverService, toReceiverView } from '../receivers/receiver.service.js';
import type { TransformTestDto, TransformTestResultDto } from '../transforms/dto/transform.dto.js';
import type { RecoveryDto } from '../recoveries/dto/recovery.dto.js';
import { RecoveryService } from '../recoveries/recovery.service.js';
import { signWebhook } from '../signing/signature.js';
import { SigningSecretService } from '../signing/signing-secret.service.js';
import type { PortalDeliveryDto, PortalDeliveryQueryDto, PortalReceiverDto, PortalSecretsDto, PortalSettingsDto } from './dto/portal.dto.js';
import { PortalSessionRepository } from './portal-session.repository.js';
import type { PortalCaller } from './portal-session.service.js';

/** The rule for addresses a portal sets: the public internet only. */
const PUBLIC_ONLY = new NetworkPolicy([], 'a portal session sets public addresses only');

/** How long "Send a test" waits for its result beyond the receiver's timeout. */
const TEST_WAIT_MARGIN_MS = 3_000;
const TEST_POLL_MS = 100;

type Secret = { secret: string; createdAt: string; expiresAt: string | null };

/**
 * What a portal session can see and do: always its one receiver, by the id the
 * session row names, with the key of that row. Every read and change goes through the
 * services the API uses, so tenancy, holds, tasks and recoveries work as they do there.
 */
@Injectable()
export class PortalService {
  constructor(
    private readonly sessions: PortalSessionRepository,
    private readonly receivers: ReceiverService,
    private readonly callbacks: CallbackService,
    private readonly recoveries: RecoveryService,
    private readonly latency: LatencyService,
    private readonly signing: SigningSecretService,
    private readonly batches: BatchService,
    private readonly config: AppConfig,
    private readonly transforms: ReceiverTransformService,
  ) {}

  async receiver(p: PortalCaller): Promise<PortalReceiverDto> {
    const { figures, transform, ...rest } = await this.receivers.getReceiver(p.apiKeyId, p.receiver);
    return { ...pickReceiver(rest), transform, figures };
  }

  /**
   * Changes its URL, headers, transform or disabled (a disable holds its callbacks, an enable
   * releases them: the receiver API's tasks). The portal is for people outside the
   * sender, so a URL it sets must be public whatever ALLOW_PRIVATE_NETWORKS opens and
   * whatever its key is granted: an IP literal or a name resolving now to an address
   * the public rule refuses is a 400, and the destination is recorded as the portal's
   * (`portal_hosts`), so its callbacks connect to public addresses only, whatever the
   * name resolves to when they are sent (claim.sql.ts, the transport).
   */
  async updateSettings(p: PortalCaller, dto: PortalSettingsDto): Promise<PortalReceiverDto> {
    const changes = {
      ...(dto.url !== undefined && { url: dto.url }),
      ...(dto.headers !== undefined && { headers: dto.headers }),
      ...(dto.disabled !== undefined && { disabled: dto.disabled }),
      ...(dto.transform !== undefined && { transform: dto.transform }),
    };
    if (Object.keys(changes).length === 0) throw new AppError('validation_failed', 'give url, headers, transform or disabled');
    if (dto.url !== undefined) {
      const refused = await hostnameRefusal(PUBLIC_ONLY, new URL(dto.url).hostname);
      if (refused) throw new AppError('validation_failed', `url: the portal sets public addresses only; ${refused}`);
    }
    await this.receivers.require(p.apiKeyId, p.receiver);
    await this.receivers.putReceiver(p.apiKeyId, p.receiver, changes, { portalHost: dto.url === undefined ? undefined : destinationOf(dto.url) });
    return this.receiver(p);
  }

  async secrets(p: PortalCaller): Promise<PortalSecretsDto> {
    return { secrets: await this.signing.secretsOfReceiver(p.receiverId) };
  }

  async rotateSecret(p: PortalCaller): Promise<PortalSecretsDto> {
    await this.receivers.rotateSecret(p.apiKeyId, p.receiver);
    return this.secrets(p);
  }

  async deliveries(p: PortalCaller, q: PortalDeliveryQueryDto): Promise<CallbackPageDto> {
    const rows = await this.sessions.listDeliveries({
      apiKeyId: p.apiKeyId,
      receiverId: p.receiverId,
      status: q.status,
      since: q.since,
      until: q.until,
      eventType: q.eventType,
      before: q.cursor,
      limit: q.limit + 1,
    });
    const page = pageOf(rows, q.limit, (r) => r.id);
    return { items: page.rows.map(toCallbackView), nextCursor: page.nextCursor };
  }

  /** One delivery of this receiver with its attempts, each with the request as sent; another receiver's is a 404. */
  async delivery(p: PortalCaller, id: string): Promise<PortalDeliveryDto> {
    const sent = await this.sessions.findRequest(p.apiKeyId, p.receiverId, id);
    if (!sent) throw notFound('delivery');
    const [detail, secrets] = await Promise.all([this.callbacks.getCallback(p.apiKeyId, id), this.signing.secretsOfReceiver(p.receiverId)]);
    const headers = sent.headers as Record<string, string>;
    const attempts = detail.attempts.map((a) => {
      // what its transform made and sent is recorded with the attempt as it went
      if (a.transformed) return { ...a, request: a.transformed };
      const timestamp = Math.floor(Date.parse(a.startedAt) / 1000);
      const signingSecrets = secretsAt(secrets, Date.parse(a.startedAt));
      // As buildRequest makes them: one header per name whatever its case.
      const sentHeaders = layerHeaders({ 'user-agent': USER_AGENT }, headers);
      sentHeaders['webhook-id'] = sent.id;
      sentHeaders['webhook-timestamp'] = String(timestamp);
      if (signingSecrets.length > 0) sentHeaders['webhook-signature'] = signWebhook(sent.id, timestamp, sent.body ?? '', signingSecrets);
      const request = { method: sent.method, url: sent.url, headers: sentHeaders, body: sent.body };
      return { ...a, request };
    });
    return { ...detail, attempts, body: sent.body };
  }

  /** Sends one failed or cancelled delivery again. */
  async replayDelivery(p: PortalCaller, id: string): Promise<CallbackDetailDto> {
    if (!(await this.sessions.findRequest(p.apiKeyId, p.receiverId, id))) throw notFound('delivery');
    return this.callbacks.retryCallback(p.apiKeyId, id);
  }

  /** Every failed delivery accepted since `since`, sent again by a recovery (chunked, resumable: src/recoveries). */
  replayFailedSince(p: PortalCaller, since: string): Promise<RecoveryDto> {
    return this.recoveries.startRecovery(p.apiKeyId, { receiver: p.receiver, since, status: ['failed'] });
  }

  async replay(p: PortalCaller, id: string): Promise<RecoveryDto> {
    if (!(await this.sessions.recoveryOfReceiver(p.apiKeyId, p.receiverId, id))) throw notFound('replay');
    return this.recoveries.getRecovery(p.apiKeyId, id);
  }

  /**
   * A signed example callback to the receiver's URL, one attempt, high priority;
   * answers once it has finished (or after the receiver's timeout and a margin, pending).
   */
  async sendTest(p: PortalCaller): Promise<CallbackDetailDto> {
    const receiver = await this.receivers.require(p.apiKeyId, p.receiver);
    if (!receiver.url) throw new AppError('validation_failed', 'this receiver has no URL to send a test to: set one first');
    if (receiver.disabled) throw new AppError('conflict', 'this receiver is disabled: enable it to send a test');
    const dto = {
      label: 'portal test',
      callbacks: [
        { receiver: p.receiver, maxAttempts: 1, priority: 'high', body: { type: 'portal.test', receiver: p.receiver, sentAt: new Date().toISOString() } },
      ],
    } as unknown as CreateBatchDto;
    const accepted = await this.batches.acceptBatch(p.apiKeyId, dto);
    const id = accepted.callbacks[0].id;
    const until = Date.now() + (receiver.timeoutMs ?? this.config.httpTimeoutMs) + TEST_WAIT_MARGIN_MS;
    for (;;) {
      const view = await this.callbacks.getCallback(p.apiKeyId, id);
      if (view.status !== 'pending' && view.status !== 'in_flight') return view;
      if (Date.now() > until) return view;
      await new Promise((r) => setTimeout(r, TEST_POLL_MS));
    }
  }

  /** Its transform, or the code given, tried on a sample or one of its deliveries; nothing is sent (the API's test: ReceiverTransformService). */
  testTransform(p: PortalCaller, dto: TransformTestDto): Promise<TransformTestResultDto> {
    return this.transforms.testTransform(p.apiKeyId, p.receiver, dto);
  }

  latencyHistory(p: PortalCaller, q: Pick<LatencyQueryDto, 'from' | 'to' | 'bucket'>): Promise<LatencyHistoryDto> {
    return this.latency.latencyHistory(p.apiKeyId, { from: q.from, to: q.to, bucket: q.bucket, receiver: p.receiver });
  }
}

/** The secrets that signed at `atMs`: made before it and not yet expired then. */
function secretsAt(secrets: Secret[], atMs: number): string[] {
  return secrets.filter((s) => Date.parse(s.createdAt) <= atMs && (s.expiresAt === null || Date.parse(s.expiresAt) > atMs)).map((s) => s.secret);
}

/** The receiver's settings only: what the portal shows (not its subscriptions, filter or secrets). */
function pickReceiver(r: ReturnType<typeof toReceiverView>) {
  const { name, url, description, headers, timeoutMs, maxAttempts, retryDelaysMs, disabled, disabledReason, disabledAt, failingSince, createdAt, updatedAt } =
    r;
  return { name, url, description, headers, timeoutMs, maxAttempts, retryDelaysMs, disabled, disabledReason, disabledAt, failingSince, createdAt, updatedAt };
}
