import { Injectable } from '@nestjs/common';
import { destinationOf } from '../../common/validators.js';
import { CredentialRepository, type SendingCredentials } from '../../receiver-auth/credential.repository.js';
import { secretsOf, staticAuthorization, type AuthShown, type AuthType } from '../../receiver-auth/credential.policy.js';
import type { ConnectionCredentials } from '../transport/agent.pools.js';

/** Credentials are re-read this often, so a change shows within seconds (as a rotated signing secret does). */
const CACHE_MS = 5_000;
/** Cached receivers past which expired entries are dropped. */
const CACHE_MAX = 50_000;

/** What a call of a receiver with credentials is sent with, prepared once per version of them. */
export interface SendCredentials {
  receiverId: string;
  version: string;
  /** `<receiver id> <version>`: the key of its token and of its connection pool. */
  key: string;
  type: AuthType | null;
  /** basic and bearer: the Authorization value, built once. */
  authorization?: string;
  /**
   * `privateNetworks`: its token requests may go to the ranges ALLOW_PRIVATE_NETWORKS
   * opens (its key is granted them and a portal session did not choose the token
   * endpoint's destination), as a callback may (claim.sql.ts).
   */
  oauth2?: { auth: Extract<AuthShown, { type: 'oauth2' }>; clientSecret: string; privateNetworks: boolean };
  tls?: ConnectionCredentials;
  /** Every secret of these credentials, to scrub from what a token endpoint answered. */
  secrets: string[];
}

export function toSendCredentials(c: SendingCredentials): SendCredentials {
  const key = `${c.receiverId} ${c.version}`;
  const shown = c.auth?.shown;
  return {
    receiverId: c.receiverId,
    version: c.version,
    key,
    type: shown?.type ?? null,
    authorization: staticAuthorization(c.auth),
    ...(shown?.type === 'oauth2' && {
      oauth2: {
        auth: shown,
        clientSecret: (c.auth!.secret as { clientSecret: string }).clientSecret,
        privateNetworks: c.keyPrivateNetworks && !c.portalHosts.includes(destinationOf(shown.tokenUrl)),
      },
    }),
    ...(c.tls && {
      tls: { poolKey: key, cert: c.tls.clientCertificate ?? undefined, key: c.tls.clientKey ?? undefined, ca: c.tls.ca ?? undefined },
    }),
    secrets: secretsOf(c),
  };
}

/** The credentials of one claim's callbacks, by receiver (CredentialCache.credentialsFor). */
export type CredentialLookup = ReadonlyMap<string, SendCredentials | null>;

/**
 * Receivers' credentials as the worker sends with them, looked up once per claim (as
 * the signing secrets are), opened and prepared once per version, and cached
 * briefly: a claim of receivers all cached costs a map lookup per row and no
 * statement; the rest cost one statement. Receivers without credentials are cached
 * as such, so a receiver without auth costs no more than that lookup.
 */
@Injectable()
export class CredentialCache {
  private readonly cache = new Map<string, { credentials: SendCredentials | null; until: number }>();

  constructor(private readonly credentials: CredentialRepository) {}

  async credentialsFor(rows: Iterable<{ receiverId: string | null }>): Promise<CredentialLookup> {
    const now = Date.now();
    const found = new Map<string, SendCredentials | null>();
    const missing = new Set<string>();
    let last: string | null = null;
    for (const { receiverId } of rows) {
      // a claim's rows mostly come in runs of one receiver
      if (receiverId === null || receiverId === last) continue;
      last = receiverId;
      if (found.has(receiverId) || missing.has(receiverId)) continue;
      const hit = this.cache.get(receiverId);
      if (hit && hit.until > now) found.set(receiverId, hit.credentials);
      else missing.add(receiverId);
    }
    if (missing.size > 0) {
      const stored = await this.credentials.findCredentials([...missing]);
      const byId = new Map(stored.map((c) => [c.receiverId, c]));
      if (this.cache.size + missing.size > CACHE_MAX) for (const [id, hit] of this.cache) if (hit.until <= now) this.cache.delete(id);
      for (const id of missing) {
        const c = byId.get(id);
        const previous = this.cache.get(id)?.credentials;
        // the same version keeps its prepared object unless what its token requests may reach changed
        // (a grant, a portal's choice); the token and the pool go by its key either way
        const next = c ? toSendCredentials(c) : null;
        const credentials = next && previous?.version === next.version && previous.oauth2?.privateNetworks === next.oauth2?.privateNetworks ? previous : next;
        this.cache.set(id, { credentials, until: now + CACHE_MS });
        found.set(id, credentials);
      }
    }
    return found;
  }

  /** One receiver's credentials as stored now (the test call: never a cached older version). */
  async current(receiverId: string): Promise<SendCredentials | null> {
    const [c] = await this.credentials.findCredentials([receiverId]);
    return c ? toSendCredentials(c) : null;
  }
}
