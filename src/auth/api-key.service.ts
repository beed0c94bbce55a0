import { Injectable, Logger } from '@nestjs/common';
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { AppConfig } from '../config/app.config.js';
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
/** Digests of keys this process verified, kept at most this many (the set starts over when full). */
const MAX_KNOWN = 10_000;

/** The part of a presented key its row is found by, and failed attempts are counted per. */
export const keyPrefixOf = (presented: string): string => presented.slice(0, LOOKUP_CHARS);

/** One-shot hash: half the cost of createHash().update().digest(), and the guard hashes every request's key. */
const sha256 = (s: string) => hash('sha256', s, 'buffer');

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
  async createKey(name: string, options: { isAdmin?: boolean; key?: string } = {}): Promise<CreatedKey> {
    const key = options.key ?? `${KEY_PREFIX}${randomBytes(24).toString('base64url')}`;
    const prefix = key.slice(0, LOOKUP_CHARS);
    const row = await this.keys.insertKey({ id: uuidv7(), name, prefix, hash: sha256(key).toString('hex'), isAdmin: options.isAdmin ?? false });
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
    const rows = await this.keys.findActiveByPrefix(keyPrefixOf(presented));
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
    return this.known.size > 0 && this.known.has(sha256(presented).toString('hex'));
  }

  listKeys(): Promise<ApiKeyRow[]> {
    return this.keys.listKeys();
  }

  setWeight(id: string, weight: number): Promise<ApiKeyRow | null> {
    return this.keys.updateWeight(id, weight);
  }

  async revokeKey(id: string): Promise<boolean> {
    const revoked = await this.keys.revokeKey(id);
    this.cache.clear();
    this.known.clear();
    return revoked;
  }

  /**
   * First start: make sure someone can call the API. BOOTSTRAP_API_KEY is registered
   * as given; without it a fresh admin key is generated and printed once.
   */
  async ensureFirstKey(): Promise<CreatedKey | undefined> {
    if ((await this.keys.countActive()) > 0) return undefined;
    const given = this.config.bootstrapApiKey;
    const created = await this.createKey('bootstrap', { isAdmin: true, key: given });
    this.logger.log(`created the first API key "${created.name}"`);
    return given ? { ...created, key: '(BOOTSTRAP_API_KEY)' } : created;
  }
}
