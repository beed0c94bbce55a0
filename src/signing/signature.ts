import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signature: `v1,<base64 HMAC-SHA256(secret, "id.timestamp.body")>`,
 * one per secret, space-separated (two during a rotation overlap). Secrets are
 * `whsec_<base64 key>`.
 */
export function signWebhook(id: string, timestampSeconds: number, body: string, secrets: readonly string[]): string {
  const content = `${id}.${timestampSeconds}.${body}`;
  return secrets
    .map(
      (s) =>
        `v1,${createHmac('sha256', Buffer.from(s.replace(/^whsec_/, ''), 'base64'))
          .update(content)
          .digest('base64')}`,
    )
    .join(' ');
}

/** A fresh `whsec_` secret: 32 random bytes, base64. */
export const newSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;
