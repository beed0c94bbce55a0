export const REDACTED = '[redacted]';

/**
 * Credentials the service hands out or is given, by their shape: `whsec_` signing
 * secrets, `cbk_` API keys, `cbp_` portal tokens (claims `.` signature) and cookies,
 * any bearer token, and the value of a query parameter named like a credential (a
 * portal link's `?token=`, a receiver URL's `?access_token=`). The rest of a line stays.
 */
const SECRET_PATTERNS: Array<[RegExp, string]> = [
  [/whsec_[A-Za-z0-9+/=_-]+/g, REDACTED],
  [/cbk_[A-Za-z0-9_-]+/g, REDACTED],
  [/cbp_[A-Za-z0-9_.-]+/g, REDACTED],
  [/(Bearer\s+)\S+/gi, `$1${REDACTED}`],
  [/(Basic\s+)[A-Za-z0-9+/]{8,}={0,2}/gi, `$1${REDACTED}`],
  [/([?&;](?:[\w.-]*(?:token|secret|password|passwd|signature|api[_-]?key|apikey|auth)[\w.-]*|key|sig|code)=)[^&#\s"']*/gi, `$1${REDACTED}`],
];

/** Field names whose values are never logged, at any depth. */
export const SECRET_FIELDS = [
  'authorization',
  'cookie',
  'secret',
  'secrets',
  'key',
  'apiKey',
  'bootstrapApiKey',
  'signingSecret',
  'password',
  // a receiver's credentials (receiver-auth/) and the OAuth2 tokens they get
  'token',
  'clientSecret',
  'client_secret',
  'clientKey',
  'accessToken',
  'access_token',
];

/**
 * `text` with every secret-looking token, and each of `extra` (BOOTSTRAP_API_KEY,
 * METRICS_TOKEN, SECRETS_KEY: whatever they look like, as written and as a URL writes
 * them), replaced by [redacted].
 */
export function redactText(text: string, extra: string[] = []): string {
  let out = text;
  for (const secret of extra) {
    if (!secret) continue;
    out = out.split(secret).join(REDACTED);
    const encoded = encodeURIComponent(secret);
    if (encoded !== secret) out = out.split(encoded).join(REDACTED);
  }
  for (const [pattern, replacement] of SECRET_PATTERNS) out = out.replace(pattern, replacement);
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
