import { Injectable, Logger } from '@nestjs/common';
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { AppConfig } from '../config/app.config.js';
import { AppError } from '../common/app.error.js';
import { uuidv7 } from '../common/uuid.js';
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

const KEY_PREFIX = 'cbk_';
/** Characters of the key stored in clear to find its row (prefix + 8 = 48 random bits). */
const LOOKUP_CHARS = KEY_PREFIX.length + 8;
/** Verified keys are remembered this long, so hot endpoints skip a query per request. */
const CACHE_MS = 5_000;

/** One-shot hash: half the cost of createHash().update().digest(), and the guard hashes every request's key. */
const sha256 = (s: string) => hash('sha256', s, 'buffer');

@Injectable()
export class ApiKeyService {
  private readonly logger = new Logger(ApiKeyService.name);
  private readonly cache = new Map<string, { key: AuthenticatedKey; until: number }>();

  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly config: AppConfig,
  ) {}

  /** Creates a key; pass `key` to register a chosen value (BOOTSTRAP_API_KEY). */
  async createKey(name: string, options: { isAdmin?: boolean; key?: string; allowPrivateNetworks?: boolean } = {}): Promise<CreatedKey> {
    const key = options.key ?? `${KEY_PREFIX}${randomBytes(24).toString('base64url')}`;
    const prefix = key.slice(0, LOOKUP_CHARS);
    const row = await this.keys.insertKey({
      id: uuidv7(),
      name,
      prefix,
      hash: sha256(key).toString('hex'),
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
    const digest = sha256(presented);
    const cacheKey = digest.toString('hex');
    const hit = this.cache.get(cacheKey);
    if (hit && hit.until > Date.now()) return hit.key;
    const rows = await this.keys.findActiveByPrefix(presented.slice(0, LOOKUP_CHARS));
    const row = rows.find((r) => timingSafeEqual(Buffer.from(r.hash, 'hex'), digest));
    if (!row) return undefined;
    const key = { id: row.id, name: row.name, isAdmin: row.isAdmin };
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(cacheKey, { key, until: Date.now() + CACHE_MS });
    return key;
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

  async revokeKey(id: string): Promise<boolean> {
    const revoked = await this.keys.revokeKey(id);
    this.cache.clear();
    return revoked;
  }

  /**
   * First start: make sure someone can call the API. BOOTSTRAP_API_KEY is registered
   * as given; without it a fresh admin key is generated and printed once.
   */
  async ensureFirstKey(): Promise<CreatedKey | undefined> {
    if ((await this.keys.countActive()) > 0) return undefined;
    const given = this.config.bootstrapApiKey;
    // the install's own key: the private ranges ALLOW_PRIVATE_NETWORKS opens are for it, as a one-team install expects
    const created = await this.createKey('bootstrap', { isAdmin: true, key: given, allowPrivateNetworks: true });
    this.logger.log(`created the first API key "${created.name}" (${created.prefix}…)`);
    return given ? { ...created, key: '(BOOTSTRAP_API_KEY)' } : created;
  }
}
