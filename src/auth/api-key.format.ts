import { hash, randomBytes } from 'node:crypto';

/** Every key the service makes starts with this. */
export const KEY_PREFIX = 'cbk_';
/** Characters of the key stored in clear to find its row (prefix + 8 = 48 random bits). */
export const LOOKUP_CHARS = KEY_PREFIX.length + 8;

/** A new key: the prefix and 24 random bytes. */
export const newKey = (): string => `${KEY_PREFIX}${randomBytes(24).toString('base64url')}`;

/** The clear part of a key stored beside its hash, to find its row. */
export const prefixOf = (key: string): string => key.slice(0, LOOKUP_CHARS);

/** SHA-256 of the whole key, the only form in which it is stored (one-shot hash: the guard hashes every request's key). */
export const digestOf = (key: string): Buffer => hash('sha256', key, 'buffer');
