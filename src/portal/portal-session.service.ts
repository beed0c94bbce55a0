import { Injectable } from '@nestjs/common';
import { AppError, notFound } from '../common/app.error.js';
import { uuidv7 } from '../common/uuid.js';
import { ReceiverService } from '../receivers/receiver.service.js';
import { SecretKeyring } from '../config/secret-keyring.js';
import type { CreatePortalSessionDto, PortalSessionDto, RevokedPortalSessionsDto } from './dto/portal-session.dto.js';
import { PortalSessionRepository, type PortalSessionRow } from './portal-session.repository.js';
import {
  csrfTokenOf,
  csrfValid,
  normalizeCapabilities,
  portalTokenValid,
  readPortalToken,
  signPortalToken,
  type PortalCapability,
  type PortalClaims,
} from './portal-token.policy.js';

/** Sessions last an hour unless asked otherwise, at most 7 days. */
export const PORTAL_TTL_DEFAULT_S = 3600;
export const PORTAL_TTL_MAX_S = 7 * 24 * 3600;
/** HKDF purpose of the key portal tokens and CSRF tokens are signed with. */
const PURPOSE = 'callbacks/portal-session/v1';

/** A portal request's caller: one receiver of one key, with what it may do. */
export interface PortalCaller {
  sessionId: string;
  apiKeyId: string;
  receiverId: string;
  receiver: string;
  capabilities: PortalCapability[];
  theme: Record<string, string> | null;
  returnUrl: string | null;
  expiresAt: Date;
}

@Injectable()
export class PortalSessionService {
  constructor(
    private readonly sessions: PortalSessionRepository,
    private readonly receivers: ReceiverService,
    private readonly keyring: SecretKeyring,
  ) {}

  /** Mints a session of the key's receiver `name`; `baseUrl` is where this service is reached (the portal link's origin). */
  async mintSession(apiKeyId: string, name: string, dto: CreatePortalSessionDto, baseUrl: string): Promise<PortalSessionDto> {
    const receiver = await this.receivers.require(apiKeyId, name);
    const ttl = dto.ttlSeconds ?? PORTAL_TTL_DEFAULT_S;
    const id = uuidv7();
    // Whole seconds: the token's exp and the row's expiry are the same instant.
    const expiresAt = new Date((Math.floor(Date.now() / 1000) + ttl) * 1000);
    const capabilities = normalizeCapabilities(dto.capabilities);
    await this.sessions.insertSession(
      {
        id,
        apiKeyId,
        receiverId: receiver.id,
        capabilities,
        theme: dto.theme ?? null,
        returnUrl: dto.returnUrl ?? null,
        expiresAt,
      },
      new Date(),
    );
    const token = signPortalToken({ sid: id, rid: receiver.id, exp: expiresAt.getTime() / 1000, kid: this.keyring.currentId }, this.key());
    return { url: `${baseUrl}/portal/session?token=${token}`, token, expiresAt: expiresAt.toISOString(), capabilities };
  }

  /** Revokes every live session of the receiver; the next request of each is refused. */
  async revokeSessions(apiKeyId: string, name: string): Promise<RevokedPortalSessionsDto> {
    const receiver = await this.receivers.require(apiKeyId, name);
    return { receiver: name, revoked: await this.sessions.revokeSessions(receiver.id, new Date()) };
  }

  /**
   * The caller a token stands for, or a 401. The signature and expiry are checked first
   * (no database read for a forged or stale token); then the session row decides:
   * revoked, expired, its receiver deleted or its key revoked, it is refused.
   */
  async authenticate(token: string | undefined): Promise<PortalCaller> {
    const claims = this.signedClaims(token);
    if (!claims) throw refused();
    return this.callerOf(claims);
  }

  /** The claims of a token this service signed and that has not expired, else undefined; reads nothing but the token. */
  signedClaims(token: string | undefined): PortalClaims | undefined {
    const claims = readPortalToken(token);
    const key = claims && this.keyring.derive(PURPOSE, claims.kid);
    return claims && key && portalTokenValid(token!, claims, key, Date.now()) ? claims : undefined;
  }

  /** The caller of signed `claims` as its session row says, or a 401 (revoked, expired, receiver deleted, key revoked). */
  async callerOf(claims: PortalClaims): Promise<PortalCaller> {
    const row = await this.sessions.findLiveSession(claims.sid, new Date());
    if (!row || row.receiverId !== claims.rid) throw refused();
    return toCaller(row);
  }

  csrfToken(caller: PortalCaller): string {
    return csrfTokenOf(caller.sessionId, this.key());
  }

  checkCsrf(caller: PortalCaller, given: unknown): void {
    if (!csrfValid(given, caller.sessionId, this.key())) {
      throw new AppError('forbidden', 'missing or wrong x-csrf-token: a change needs the CSRF token of GET /portal/api/session');
    }
  }

  /** Throws 403 unless the session holds `capability`. */
  require(caller: PortalCaller, capability: PortalCapability): void {
    if (!caller.capabilities.includes(capability)) throw new AppError('forbidden', `this portal session lacks the ${capability} capability`);
  }

  private key(): Buffer {
    const key = this.keyring.derive(PURPOSE);
    if (!key) throw notFound('portal signing key');
    return key;
  }
}

/** The 401 of a portal token that is not, or no longer, a session. */
export const refused = () => new AppError('unauthorized', 'invalid, expired or revoked portal session: ask the sender for a new link');

function toCaller(row: PortalSessionRow): PortalCaller {
  return {
    sessionId: row.id,
    apiKeyId: row.apiKeyId,
    receiverId: row.receiverId,
    receiver: row.receiverName,
    capabilities: normalizeCapabilities(row.capabilities),
    theme: row.theme,
    returnUrl: row.returnUrl,
    expiresAt: row.expiresAt,
  };
}
