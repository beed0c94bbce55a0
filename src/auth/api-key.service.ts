import { Injectable, Logger } from '@nestjs/common';
import { timingSafeEqual } from 'node:crypto';
import { AppError } from '../common/app.error.js';
import { AppConfig } from '../config/app.config.js';
import { uuidv7 } from '../common/uuid.js';
import { digestOf, newKey, prefixOf } from './api-key.format.js';
import { ApiKeyRepository, ApiKeyRow } from './api-key.repository.js';

/** What a guarded handler knows about its caller. */
export interface AuthenticatedKey {
  id: string;
  name: string;
  isAdmin: boolean;
}

export interface CreatedKey extends AuthenticatedKey {
  /** The key itself: shown once, never stored. */
  key: string;
  prefix: string;
}

/**
 * What a start did about the first key. `created`: the key it made (BOOTSTRAP_API_KEY's,
 * or a new one printed once). `bootstrap`: what became of a BOOTSTRAP_API_KEY that was set
 * but not created now: `active` (added by an earlier start), `revoked` (it stays so), or
 * `not_added` (the database had keys already: it is added only to one without).
 */
export interface FirstKeyOutcome {
  created?: CreatedKey;
  bootstrap?: 'active' | 'revoked' | 'not_added';
}

/** Verified keys are remembered this long, so hot endpoints skip a query per request. */
const CACHE_MS = 5_000;
/** Digests of keys this process verified, kept at most this many (the set starts over when full). */
const MAX_KNOWN = 10_000;

/** The way back to an admin key that needs none (it writes to the database directly). */
export const LOCAL_KEY_COMMAND = 'npx callbacks keys create <name> --admin --local';

@Injectable()
export class ApiKeyService {
  private readonly logger = new Logger(ApiKeyService.name);
  private readonly cache = new Map<string, { key: AuthenticatedKey; until: number }>();
  /**
   * Digests of keys that verified in this process and have not failed since: a key here
   * is not a guess, so the failed-key limit does not hold it back (it is still verified,
   * from the cache or the database, on every request).
   */
  private readonly known = new Set<string>();

  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly config: AppConfig,
  ) {}

  /** Creates a key; pass `key` to register a chosen value (BOOTSTRAP_API_KEY). */
  async createKey(name: string, options: { isAdmin?: boolean; key?: string; allowPrivateNetworks?: boolean } = {}): Promise<CreatedKey> {
    const key = options.key ?? newKey();
    const prefix = prefixOf(key);
    const row = await this.keys.insertKey({
      id: uuidv7(),
      name,
      prefix,
      hash: digestOf(key).toString('hex'),
      isAdmin: options.isAdmin ?? false,
      allowPrivateNetworks: options.allowPrivateNetworks ?? false,
    });
    return { id: row.id, name: row.name, isAdmin: row.isAdmin, key, prefix };
  }

  /**
   * Resolves a presented key, or undefined. Rows are found by the clear prefix and
   * the hashes compared in constant time, so response timing says nothing about
   * how much of a guessed key was right.
   */
  async verifyKey(presented: string): Promise<AuthenticatedKey | undefined> {
    if (presented.length < 16 || presented.length > 256) return undefined;
    const digest = digestOf(presented);
    const cacheKey = digest.toString('hex');
    const hit = this.cache.get(cacheKey);
    if (hit && hit.until > Date.now()) return hit.key;
    const rows = await this.keys.findActiveByPrefix(prefixOf(presented));
    const row = rows.find((r) => timingSafeEqual(Buffer.from(r.hash, 'hex'), digest));
    if (!row) {
      this.known.delete(cacheKey);
      return undefined;
    }
    const key = { id: row.id, name: row.name, isAdmin: row.isAdmin };
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(cacheKey, { key, until: Date.now() + CACHE_MS });
    if (this.known.size >= MAX_KNOWN) this.known.clear();
    this.known.add(cacheKey);
    return key;
  }

  /** True when `presented` verified in this process before and has not failed since. */
  isKnownKey(presented: string): boolean {
    return this.known.size > 0 && this.known.has(digestOf(presented).toString('hex'));
  }

  listKeys(): Promise<ApiKeyRow[]> {
    return this.keys.listKeys();
  }

  /** Sets what is given of a key's weight and grant of private networks; null when there is no such key. */
  updateKey(id: string, changes: { weight?: number; allowPrivateNetworks?: boolean }): Promise<ApiKeyRow | null> {
    if (changes.weight === undefined && changes.allowPrivateNetworks === undefined) {
      throw new AppError('validation_failed', 'give weight, allowPrivateNetworks or both');
    }
    return this.keys.updateKey(id, changes);
  }

  /**
   * Revokes an active key. The last active admin key is refused (409): without one,
   * nobody could make or revoke keys through the API again.
   */
  async revokeKey(id: string): Promise<boolean> {
    const result = await this.keys.revokeKey(id);
    if (result === 'last_admin') {
      throw new AppError(
        'conflict',
        'this is the last active admin key: it cannot be revoked. Create another admin key first (POST /v1/keys with "admin": true), switch to it, then revoke this one',
      );
    }
    this.cache.clear();
    this.known.clear();
    return result === 'revoked';
  }

  /**
   * At start: make sure someone can call the API. A BOOTSTRAP_API_KEY is created as
   * given when the database has no active key; one revoked earlier stays revoked, and
   * one set beside other keys is not added: both said in a warning, and the start goes
   * on. Without BOOTSTRAP_API_KEY, a database without an active key gets a new admin
   * key, printed once by the caller.
   */
  async ensureFirstKey(): Promise<FirstKeyOutcome> {
    const given = this.config.bootstrapApiKey;
    if (given) return this.ensureBootstrapKey(given);
    if ((await this.keys.countActive()) > 0) return {};
    // the install's own key: the private ranges ALLOW_PRIVATE_NETWORKS opens are for it, as a one-team install expects
    const created = await this.createKey('bootstrap', { isAdmin: true, allowPrivateNetworks: true });
    this.logger.log(`created the first API key "${created.name}"`);
    return { created };
  }

  private async ensureBootstrapKey(given: string): Promise<FirstKeyOutcome> {
    const row = await this.keys.findByHash(digestOf(given).toString('hex'));
    if (row?.revokedAt) {
      this.logger.warn(
        `BOOTSTRAP_API_KEY is key ${row.id} "${row.name}", revoked at ${row.revokedAt.toISOString()}: it stays revoked and is not added again. ` +
          `Unset BOOTSTRAP_API_KEY; for a new admin key without one: ${LOCAL_KEY_COMMAND}`,
      );
      return { bootstrap: 'revoked' };
    }
    if (row) return { bootstrap: 'active' };
    const active = await this.keys.countActive();
    if (active > 0) {
      this.logger.warn(
        `BOOTSTRAP_API_KEY is set but was NOT added: it is added only to a database without keys, and this one has ${active} active key(s). ` +
          `Use one of those, or make an admin key without one: ${LOCAL_KEY_COMMAND}`,
      );
      return { bootstrap: 'not_added' };
    }
    try {
      const created = await this.createKey('bootstrap', { isAdmin: true, key: given, allowPrivateNetworks: true });
      this.logger.log(`created the first API key "${created.name}" from BOOTSTRAP_API_KEY`);
      return { created: { ...created, key: '(BOOTSTRAP_API_KEY)' } };
    } catch (error) {
      // Another process starting on the same database added it first.
      if ((error as { code?: string }).code === 'P2002') return { bootstrap: 'active' };
      throw error;
    }
  }
}
