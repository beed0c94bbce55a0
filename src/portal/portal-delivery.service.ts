import { Injectable } from '@nestjs/common';
import { CallbackService, toCallbackView } from '../callbacks/callback.service.js';
import type { CallbackDetailDto, CallbackPageDto } from '../callbacks/dto/callback.dto.js';
import { notFound } from '../common/app.error.js';
import { layerHeaders } from '../common/headers.js';
import { pageOf } from '../common/page.js';
import { ReadReplica } from '../database/read-replica.js';
import { USER_AGENT } from '../common/user-agent.js';
import type { LatencyHistoryDto, LatencyQueryDto } from '../history/dto/latency.dto.js';
import { LatencyService } from '../history/latency.service.js';
import type { RecoveryDto } from '../recoveries/dto/recovery.dto.js';
import { RecoveryService } from '../recoveries/recovery.service.js';
import { signWebhook } from '../signing/signature.js';
import { SigningSecretService } from '../signing/signing-secret.service.js';
import type { PortalDeliveryDto, PortalDeliveryQueryDto } from './dto/portal.dto.js';
import { PortalSessionRepository } from './portal-session.repository.js';
import type { PortalCaller } from './portal-session.service.js';

type Secret = { secret: string; createdAt: string; expiresAt: string | null };

/**
 * A portal session's view of its one receiver's deliveries: the list (on the replica
 * when it serves the key), each with the requests as sent, replays and recoveries, and
 * the latency history. Every read and change goes through the services the API uses.
 */
@Injectable()
export class PortalDeliveryService {
  constructor(
    private readonly sessions: PortalSessionRepository,
    private readonly callbacks: CallbackService,
    private readonly recoveries: RecoveryService,
    private readonly latency: LatencyService,
    private readonly signing: SigningSecretService,
    private readonly reads: ReadReplica,
  ) {}

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

  latencyHistory(p: PortalCaller, q: Pick<LatencyQueryDto, 'from' | 'to' | 'bucket'>): Promise<LatencyHistoryDto> {
    return this.latency.latencyHistory(p.apiKeyId, { from: q.from, to: q.to, bucket: q.bucket, receiver: p.receiver });
  }
}

/** The secrets that signed at `atMs`: made before it and not yet expired then. */
function secretsAt(secrets: Secret[], atMs: number): string[] {
  return secrets.filter((s) => Date.parse(s.createdAt) <= atMs && (s.expiresAt === null || Date.parse(s.expiresAt) > atMs)).map((s) => s.secret);
}
