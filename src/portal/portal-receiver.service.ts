import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app.error.js';
import { hostnameRefusal, NetworkPolicy } from '../common/network.policy.js';
import { destinationOf } from '../common/validators.js';
import type { ReceiverTestDto } from '../receivers/dto/receiver-test.dto.js';
import { ReceiverTester } from '../receivers/receiver-tester.js';
import { ReceiverTransformService } from '../receivers/receiver-transform.service.js';
import { ReceiverService, toReceiverView } from '../receivers/receiver.service.js';
import type { TransformTestDto, TransformTestResultDto } from '../transforms/dto/transform.dto.js';
import { SigningSecretService } from '../signing/signing-secret.service.js';
import type { PortalReceiverDto, PortalSecretsDto, PortalSettingsDto } from './dto/portal.dto.js';
import type { PortalCaller } from './portal-session.service.js';

/** The rule for addresses a portal sets: the public internet only. */
const PUBLIC_ONLY = new NetworkPolicy([], 'a portal session sets public addresses only');

/**
 * What a portal session can see and change of its one receiver (by the id the session
 * row names, with the key of that row): its settings, secrets, test call and transform.
 * Every read and change goes through the services the API uses, so tenancy, holds and
 * tasks work as they do there.
 */
@Injectable()
export class PortalReceiverService {
  constructor(
    private readonly receivers: ReceiverService,
    private readonly signing: SigningSecretService,
    private readonly tester: ReceiverTester,
    private readonly transforms: ReceiverTransformService,
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

  /** A signed example call (`{"type": "portal.test", …}`) to the receiver's URL now, with its credentials: the API's test call, answered as its attempt. */
  sendTest(p: PortalCaller): Promise<ReceiverTestDto> {
    return this.tester.testReceiver(p.apiKeyId, p.receiver, 'portal.test');
  }

  /** Its transform, or the code given, tried on a sample or one of its deliveries; nothing is sent (the API's test: ReceiverTransformService). */
  testTransform(p: PortalCaller, dto: TransformTestDto): Promise<TransformTestResultDto> {
    return this.transforms.testTransform(p.apiKeyId, p.receiver, dto);
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

/** The receiver's settings only: what the portal shows (not its subscriptions, filter or secrets). */
function pickReceiver(r: ReturnType<typeof toReceiverView>) {
  const { name, url, description, headers, timeoutMs, maxAttempts, retryDelaysMs, disabled, disabledReason, disabledAt, failingSince, createdAt, updatedAt } =
    r;
  return { name, url, description, headers, timeoutMs, maxAttempts, retryDelaysMs, disabled, disabledReason, disabledAt, failingSince, createdAt, updatedAt };
}
