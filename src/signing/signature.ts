import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';

/**
 * Standard Webhooks signature: `v1,<base64 HMAC-SHA256(secret, "id.timestamp.body")>`,
 * one per secret, space-separated (two during a rotation overlap). Secrets are
 * `whsec_<base64 key>`.
 */
export function signWebhook(id: string, timestampSeconds: number, body: string, secrets: readonly string[]): string {
  const content = `${id}.${timestampSeconds}.${body}`;
  if (secrets.length === 1) return sign(secrets[0], content);
  return secrets.map((s) => sign(s, content)).join(' ');
}

const sign = (secret: string, content: string) => `v1,${createHmac('sha256', keyOf(secret)).update(content).digest('base64')}`;

/**
 * Decoded keys by secret: a worker signs every call with one of a few secrets (one
 * per receiver, two while one rotates), so each is decoded into a KeyObject once,
 * not per call. Bounded: past MAX_KEYS distinct secrets it starts over.
 */
const keys = new Map<string, KeyObject>();
const MAX_KEYS = 10_000;

function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size >= MAX_KEYS) keys.clear();
    key = createSecretKey(Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64'));
    keys.set(secret, key);
  }
  return key;
}

/** A fresh `whsec_` secret: 32 random bytes, base64. */
export const newSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;
