/** Secrets the service hands out or is given: signing secrets and API keys. */
const SECRET_PATTERNS = [/whsec_[A-Za-z0-9+/=_-]+/g, /cbk_[A-Za-z0-9_-]+/g, /(Bearer\s+)\S+/gi];
export const REDACTED = '[redacted]';

/** Field names whose values are never logged, at any depth. */
export const SECRET_FIELDS = ['authorization', 'cookie', 'secret', 'secrets', 'key', 'apiKey', 'bootstrapApiKey', 'signingSecret', 'password'];

/** `text` with every secret-looking token, and each of `extra` (e.g. BOOTSTRAP_API_KEY), replaced by [redacted]. */
export function redactText(text: string, extra: string[] = []): string {
  let out = text;
  for (const secret of extra) if (secret) out = out.split(secret).join(REDACTED);
  for (const pattern of SECRET_PATTERNS) out = out.replace(pattern, (_m, bearer?: string) => (typeof bearer === 'string' ? `${bearer}${REDACTED}` : REDACTED));
  return out;
}

/** A copy of `value` with secret fields and secret-looking strings redacted (depth-limited). */
export function redactValue(value: unknown, extra: string[] = [], depth = 0): unknown {
  if (typeof value === 'string') return redactText(value, extra);
  if (value === null || typeof value !== 'object' || depth > 6) return value;
  if (value instanceof Error) return { type: value.name, message: redactText(value.message, extra), stack: value.stack && redactText(value.stack, extra) };
  if (Array.isArray(value)) return value.map((v) => redactValue(v, extra, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = SECRET_FIELDS.some((f) => f.toLowerCase() === k.toLowerCase()) ? REDACTED : redactValue(v, extra, depth + 1);
  }
  return out;
}
