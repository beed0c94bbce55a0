import { Injectable } from '@nestjs/common';
import { uuidv7 } from '../common/uuid.js';
import { newSigningSecret } from './signature.js';
import { SigningSecretRepository, type SecretOwner, type SecretRow } from './signing-secret.repository.js';

/** How long the old secret keeps signing after a rotation (24 h). */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;
/** The worker re-reads secrets this often, so a rotation shows within seconds. */
const CACHE_MS = 5_000;
/** Cached secret sets past which expired ones are dropped (one per receiver or destination in use). */
const CACHE_MAX = 50_000;
/** (key, destination) pairs an API process remembers as having a secret; past it the set starts afresh. */
const KNOWN_DESTINATIONS_MAX = 100_000;

/** What a callback is signed with: its receiver's secrets, or else its key's secrets for its destination. */
export interface SigningRef {
  receiverId: string | null;
  apiKeyId: string;
  host: string;
}

/**
 * A receiver's secrets go by its id itself (the string the claim's row carries, so no
 * key is built per callback: a fan-out's rows mostly differ in receiver); a
 * destination's by `d <key> <destination>`, which no uuid can equal (it has spaces).
 */
const refKey = (r: SigningRef) => r.receiverId ?? `d ${r.apiKeyId} ${r.host}`;
const rowKey = (r: SecretRow) => r.receiverId ?? `d ${r.apiKeyId} ${r.destination}`;

/**
 * refKey that hands back the last key while the refs share their receiver or
 * destination, as a claim's rows mostly do: the same string object, whose hash the
 * maps computed once, instead of a new one built and hashed per row.
 */
function lastRefKey(): (r: SigningRef) => string {
  let last: SigningRef | undefined;
  let key = '';
  return (r) => {
    if (last === undefined || r.receiverId !== last.receiverId || r.apiKeyId !== last.apiKeyId || r.host !== last.host) {
      last = r;
      key = refKey(r);
    }
    return key;
  };
}

/** The secrets of one claim's callbacks, looked up together (SigningSecretService.secretsFor). */
export class SecretLookup {
  private readonly keyOf = lastRefKey();

  constructor(private readonly byKey: ReadonlyMap<string, readonly string[]>) {}

  /** The secrets to sign this callback with (newest first); never another receiver's or destination's. */
  secretsOf(ref: SigningRef): readonly string[] {
    return this.byKey.get(this.keyOf(ref)) ?? [];
  }
}

export function toSecretsView(rows: SecretRow[]) {
  return rows.map((r) => ({ secret: r.secret, createdAt: r.createdAt.toISOString(), expiresAt: r.expiresAt?.toISOString() ?? null }));
}

@Injectable()
export class SigningSecretService {
  private readonly cache = new Map<string, { secrets: string[]; until: number }>();
  private readonly knownDestinations = new Set<string>();

  constructor(private readonly secrets: SigningSecretRepository) {}

  /**
   * The secrets for these callbacks, by receiver or (key, destination), cached
   * briefly: one statement for whatever the cache lacks. A destination without a
   * secret (callbacks stored before secrets were per destination) gets one here,
   * in one more statement; the ingest makes them, so this is rare.
   */
  async secretsFor(refs: Iterable<SigningRef>): Promise<SecretLookup> {
    const now = Date.now();
    const byKey = new Map<string, string[]>();
    const missing = new Map<string, SigningRef>();
    const keyOf = lastRefKey();
    for (const ref of refs) {
      const key = keyOf(ref);
      if (byKey.has(key) || missing.has(key)) continue;
      const hit = this.cache.get(key);
      if (hit && hit.until > now) byKey.set(key, hit.secrets);
      else missing.set(key, ref);
    }
    if (missing.size > 0) {
      let rows = await this.findLive([...missing.values()]);
      const found = new Set(rows.map(rowKey));
      const without = [...missing.values()].filter((r) => !r.receiverId && !found.has(refKey(r)));
      if (without.length > 0) {
        await this.makeDestinationSecrets(without.map((r) => ({ apiKeyId: r.apiKeyId, destination: r.host })));
        rows = rows.concat(await this.findLive(without));
      }
      for (const key of missing.keys()) byKey.set(key, []);
      for (const row of rows) byKey.get(rowKey(row))?.push(row.secret);
      if (this.cache.size + missing.size > CACHE_MAX) for (const [key, hit] of this.cache) if (hit.until <= now) this.cache.delete(key);
      for (const key of missing.keys()) this.cache.set(key, { secrets: byKey.get(key)!, until: now + CACHE_MS });
    }
    return new SecretLookup(byKey);
  }

  /**
   * Gives each destination of these callbacks (without a receiver) a secret of its
   * key, if it has none: called at ingest before the 202, so the worker never has to.
   * Pairs this process already made or saw cost nothing.
   */
  async ensureDestinationSecrets(apiKeyId: string, destinations: Iterable<string>): Promise<void> {
    const unknown = [...new Set(destinations)].filter((d) => !this.knownDestinations.has(`${apiKeyId} ${d}`));
    if (unknown.length === 0) return;
    await this.makeDestinationSecrets(unknown.map((destination) => ({ apiKeyId, destination })));
    if (this.knownDestinations.size + unknown.length > KNOWN_DESTINATIONS_MAX) this.knownDestinations.clear();
    for (const d of unknown) this.knownDestinations.add(`${apiKeyId} ${d}`);
  }

  /** A destination's secrets (made on first use), newest first. */
  async describeDestination(apiKeyId: string, destination: string) {
    await this.ensureDestinationSecrets(apiKeyId, [destination]);
    return { destination, secrets: toSecretsView(await this.secrets.findSecretsOf({ apiKeyId, destination })) };
  }

  async rotateDestination(apiKeyId: string, destination: string) {
    await this.ensureDestinationSecrets(apiKeyId, [destination]);
    await this.rotate(apiKeyId, { apiKeyId, destination }, newSigningSecret());
    return this.describeDestination(apiKeyId, destination);
  }

  /** A new secret row (its id, key id and sealed secret) for an insert of the caller's own: a receiver's first secret. */
  sealNew(secret: string): { id: string; keyId: string; sealed: string } {
    return this.secrets.sealNew(uuidv7(), secret);
  }

  /** A receiver's secrets, newest first. */
  async secretsOfReceiver(receiverId: string) {
    return toSecretsView(await this.secrets.findSecretsOf({ receiverId }));
  }

  /** Starts signing with `secret` (default: a new one); the current one keeps signing for 24 h beside it. */
  async rotateReceiver(apiKeyId: string, receiverId: string, secret = newSigningSecret()) {
    await this.rotate(apiKeyId, { receiverId }, secret);
    return this.secretsOfReceiver(receiverId);
  }

  private async rotate(apiKeyId: string, owner: SecretOwner, secret: string): Promise<void> {
    await this.secrets.rotateSecret(apiKeyId, owner, { id: uuidv7(), secret }, ROTATION_OVERLAP_MS);
    this.cache.delete('receiverId' in owner ? owner.receiverId : `d ${owner.apiKeyId} ${owner.destination}`);
  }

  private findLive(refs: SigningRef[]): Promise<SecretRow[]> {
    const receiverIds = refs.filter((r) => r.receiverId).map((r) => r.receiverId!);
    const destinations = refs.filter((r) => !r.receiverId).map((r) => ({ apiKeyId: r.apiKeyId, destination: r.host }));
    return this.secrets.findLiveSecrets(receiverIds, destinations);
  }

  private makeDestinationSecrets(pairs: Array<{ apiKeyId: string; destination: string }>): Promise<void> {
    return this.secrets.insertDestinationSecrets(pairs.map((p) => ({ ...p, id: uuidv7(), secret: newSigningSecret() })));
  }
}
