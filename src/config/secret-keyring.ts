import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, type AppConfig } from './app.config.js';

/** What a secret is stored as: `sealed` (base64 of nonce, ciphertext, tag) under the key `keyId`. */
export interface SealedSecret {
  keyId: string;
  sealed: string;
}

const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** The file the embedded default keeps its key in, under DATA_DIR. */
export const KEY_FILE = 'secrets.key';

/** A key's id: the first 8 bytes of SHA-256 over a label and the key, in hex (names the key, reveals nothing of it). */
export function keyIdOf(key: Buffer): string {
  return createHash('sha256').update('callbacks secrets key id\0').update(key).digest('hex').slice(0, 16);
}

/** A new random key, as SECRETS_KEY takes it (32 bytes, base64). */
export function newSecretsKey(): string {
  return randomBytes(32).toString('base64');
}

export class UnknownSecretsKeyError extends Error {}

/**
 * The keys signing secrets are stored under: the current one (SECRETS_KEY), which
 * seals every secret written, and earlier ones (SECRETS_KEY_PREVIOUS), which only open.
 * AES-256-GCM, a random 96-bit nonce per seal, the secret row's id as additional data:
 * a sealed value copied onto another row does not open there.
 */
export class SecretKeyring {
  readonly currentId: string;
  private readonly current: Buffer;
  private readonly keys = new Map<string, Buffer>();

  constructor(current: string, previous: readonly string[] = []) {
    this.current = Buffer.from(current, 'base64');
    this.currentId = keyIdOf(this.current);
    for (const raw of [current, ...previous]) {
      const key = Buffer.from(raw, 'base64');
      if (key.length !== 32) throw new ConfigError('a secrets key must be 32 bytes, base64 (openssl rand -base64 32)');
      this.keys.set(keyIdOf(key), key);
    }
  }

  /** The ids of every key this keyring opens, the current one first. */
  get ids(): string[] {
    return [...this.keys.keys()];
  }

  holds(keyId: string): boolean {
    return this.keys.has(keyId);
  }

  /**
   * A 32-byte key for `purpose` derived (HKDF-SHA256) from the key `keyId` (default:
   * the current one), so other uses (portal tokens) never use a sealing key as is;
   * undefined when this keyring lacks that key.
   */
  derive(purpose: string, keyId = this.currentId): Buffer | undefined {
    const key = this.keys.get(keyId);
    return key && Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), purpose, 32));
  }

  /** `secret` of the row `rowId`, sealed under the current key. */
  seal(rowId: string, secret: string): SealedSecret {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current, nonce).setAAD(Buffer.from(rowId));
    const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return { keyId: this.currentId, sealed: Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64') };
  }

  /**
   * The secret of row `rowId` as stored: sealed under `keyId`, or, when `keyId` is
   * null, in plain text (written before secrets were sealed, or by an older version
   * during an upgrade; the next start seals it). Throws when this keyring lacks the
   * key, or when the value does not open under it (altered, or another row's).
   */
  open(rowId: string, keyId: string | null, stored: string): string {
    if (keyId === null) return stored;
    const key = this.keys.get(keyId);
    if (!key) {
      throw new UnknownSecretsKeyError(
        `signing secret ${rowId} is sealed under key ${keyId}, which neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS holds (this process holds ${this.ids.join(', ')})`,
      );
    }
    const raw = Buffer.from(stored, 'base64');
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, NONCE_BYTES)).setAAD(Buffer.from(rowId));
    decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(NONCE_BYTES, raw.length - TAG_BYTES)), decipher.final()]).toString('utf8');
  }
}

export interface LoadedKeyring {
  keyring: SecretKeyring;
  /** Where the current key came from, for the start log. */
  source: string;
}

/**
 * The keyring of this process: SECRETS_KEY (and SECRETS_KEY_PREVIOUS) when set. Without
 * it, the embedded default keeps a key of its own in DATA_DIR/secrets.key (mode 0600),
 * made on first start; an external Postgres (DATABASE_URL) refuses to start, since a
 * key made beside one process would not be the other processes' key.
 */
export function loadKeyring(config: Pick<AppConfig, 'secretsKey' | 'secretsKeyPrevious' | 'databaseUrl' | 'dataDir'>): LoadedKeyring {
  if (config.secretsKey) return { keyring: new SecretKeyring(config.secretsKey, config.secretsKeyPrevious), source: 'SECRETS_KEY' };
  if (config.databaseUrl) {
    throw new ConfigError(
      'SECRETS_KEY is not set. With DATABASE_URL (your own Postgres) signing secrets are stored encrypted under a key you give ' +
        'every process of the service: SECRETS_KEY, 32 random bytes in base64 (openssl rand -base64 32, or npx callbacks secrets new-key). ' +
        'Keep it apart from the database and its backups.',
    );
  }
  const file = path.resolve(config.dataDir, KEY_FILE);
  let made = false;
  mkdirSync(path.dirname(file), { recursive: true });
  try {
    // 'wx': a second process starting at the same moment reads the first one's key.
    writeFileSync(file, `${newSecretsKey()}\n`, { flag: 'wx', mode: 0o600 });
    made = true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  const key = readFileSync(file, 'utf8').trim();
  if (Buffer.from(key, 'base64').length !== 32) throw new ConfigError(`${file} does not hold a secrets key (32 bytes, base64)`);
  return { keyring: new SecretKeyring(key, config.secretsKeyPrevious), source: made ? `${file} (made now; keep it with DATA_DIR)` : file };
}
