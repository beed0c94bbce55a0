import { Injectable } from '@nestjs/common';
import { CallbackService, toCallbackView } from '../callbacks/callback.service.js';
import type { CallbackDetailDto, CallbackPageDto } from '../callbacks/dto/callback.dto.js';
import { AppError, notFound } from '../common/app.error.js';
import { layerHeaders } from '../common/headers.js';
import { hostnameRefusal, NetworkPolicy } from '../common/network.policy.js';
import { pageOf } from '../common/page.js';
import { destinationOf } from '../common/validators.js';
import { AppConfig } from '../config/app.config.js';
import { ReadReplica } from '../database/read-replica.js';
import { USER_AGENT } from '../common/user-agent.js';
import type { LatencyHistoryDto, LatencyQueryDto } from '../history/dto/latency.dto.js';
import { LatencyService } from '../history/latency.service.js';
import type { ReceiverTestDto } from '../receivers/dto/receiver-test.dto.js';
import { ReceiverTester } from '../receivers/receiver-tester.js';
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
    private readonly config: AppConfig,
    private readonly tester: ReceiverTester,
    private readonly transforms: ReceiverTransformService,
    private readonly reads: ReadReplica,
  ) {}

  async receiver(p: PortalCaller): Promise<PortalReceiverDto> {
    const { figures, auth, tls, transform, ...rest } = await this.receivers.getReceiver(p.apiKeyId, p.receiver);
    return { ...pickReceiver(rest), figures, auth, tls, transform };
  }

  /**
   * Changes its URL, headers, disabled (a disable holds its callbacks, an enable releases
   * them: the receiver API's tasks), its credentials or its transform. Portal users are
   * outside the sender, so a URL it sets (the receiver's, or an OAuth2 token endpoint's)
   * must be public whatever ALLOW_PRIVATE_NETWORKS opens and whatever its key is granted:
   * an IP literal or a name now resolving to an address the public rule refuses is a 400,
   * and the destination is recorded as the portal's (`portal_hosts`), so its callbacks
   * and token requests connect to public addresses only, whatever the name resolves to
   * when sent (claim.sql.ts, credential.cache.ts, the transport). A transform it sets may
   * change a call's URL; the call then reaches public addresses only, and its credentials
   * stay with the callback's own destination (transform.step.ts).
   */
  async updateSettings(p: PortalCaller, dto: PortalSettingsDto): Promise<PortalReceiverDto> {
    const changes = {
      ...(dto.url !== undefined && { url: dto.url }),
      ...(dto.headers !== undefined && { headers: dto.headers }),
      ...(dto.disabled !== undefined && { disabled: dto.disabled }),
      // its own credentials, write-only as in the API (edit)
      ...(dto.auth !== undefined && { auth: dto.auth }),
      ...(dto.tls !== undefined && { tls: dto.tls }),
      ...(dto.transform !== undefined && { transform: dto.transform }),
    };
    if (Object.keys(changes).length === 0) throw new AppError('validation_failed', 'give url, headers, disabled, auth, tls or transform');
    const portalHosts = new Set<string>();
    for (const [field, url] of urlsSet(dto)) {
      const refused = await hostnameRefusal(PUBLIC_ONLY, url.hostname);
      if (refused) throw new AppError('validation_failed', `${field}: the portal sets public addresses only; ${refused}`);
      portalHosts.add(destinationOf(url.href));
    }
    await this.receivers.require(p.apiKeyId, p.receiver);
    await this.receivers.putReceiver(p.apiKeyId, p.receiver, changes, { portalHosts: [...portalHosts] });
    return this.receiver(p);
  }

  async secrets(p: PortalCaller): Promise<PortalSecretsDto> {
    return { secrets: await this.signing.secretsOfReceiver(p.receiverId) };
  }

  async rotateSecret(p: PortalCaller): Promise<PortalSecretsDto> {
    await this.receivers.rotateSecret(p.apiKeyId, p.receiver);
    return this.secrets(p);
  }

  /** A page of the receiver's deliveries, on the replica when it serves the key (ReadReplica). */
  async deliveries(p: PortalCaller, q: PortalDeliveryQueryDto): Promise<CallbackPageDto> {
    const filter = {
      apiKeyId: p.apiKeyId,
      receiverId: p.receiverId,
      status: q.status,
      since: q.since,
      until: q.until,
      eventType: q.eventType,
      before: q.cursor,
      limit: q.limit + 1,
    };
    const rows = await this.reads.read(p.apiKeyId, (reader) => this.sessions.listDeliveries(filter, reader));
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

  /** A signed example call (`{"type": "portal.test", …}`) to the receiver's URL now, with its credentials: the API's test call, answered as its attempt. */
  sendTest(p: PortalCaller): Promise<ReceiverTestDto> {
    return this.tester.testReceiver(p.apiKeyId, p.receiver, 'portal.test');
  }

  /** Its transform, or the code given, tried on a sample or one of its deliveries; nothing is sent (the API's test: ReceiverTransformService). */
  testTransform(p: PortalCaller, dto: TransformTestDto): Promise<TransformTestResultDto> {
    return this.transforms.testTransform(p.apiKeyId, p.receiver, dto);
  }

  latencyHistory(p: PortalCaller, q: Pick<LatencyQueryDto, 'from' | 'to' | 'bucket'>): Promise<LatencyHistoryDto> {
    return this.latency.latencyHistory(p.apiKeyId, { from: q.from, to: q.to, bucket: q.bucket, receiver: p.receiver });
  }
}

/**
 * The URLs a portal change sets, by field: its url, and its OAuth2 token endpoint. A
 * token URL that does not parse is left to the credentials' own check (a 400 naming
 * auth.tokenUrl).
 */
function urlsSet(dto: PortalSettingsDto): Array<[string, URL]> {
  const urls: Array<[string, URL]> = [];
  if (dto.url !== undefined) urls.push(['url', new URL(dto.url)]);
  const tokenUrl = (dto.auth as { tokenUrl?: unknown } | null | undefined)?.tokenUrl;
  if (typeof tokenUrl === 'string' && URL.canParse(tokenUrl)) urls.push(['auth.tokenUrl', new URL(tokenUrl)]);
  return urls;
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
